// The API page: fetches the OpenAPI document with the API key (the same key and storage as
// the dashboard) and lists every operation with its parameters, body and answers; "Send"
// calls an operation with the key and shows the answer. No third-party code: it works
// offline. Every value from the document or an answer is written with textContent.
"use strict";

const KEY_STORAGE = "billing.apiKey";
const KEY_PATTERN = /^[\x21-\x7e]+$/;

function element(id) {
  return document.getElementById(id);
}

function make(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) {
    node.textContent = text;
  }
  if (className) {
    node.className = className;
  }
  return node;
}

function showMessage(id, message) {
  const box = element(id);
  box.textContent = message || "";
  box.hidden = !message;
}

function showSignIn(message) {
  element("reference").hidden = true;
  element("forget-key").hidden = true;
  element("sign-in").hidden = false;
  showMessage("key-error", message);
  element("api-key").focus();
}

function authorization() {
  return { Authorization: `Bearer ${sessionStorage.getItem(KEY_STORAGE)}` };
}

async function load() {
  if (!sessionStorage.getItem(KEY_STORAGE)) {
    showSignIn();
    return;
  }
  let response;
  try {
    response = await fetch("/openapi.json", { headers: authorization(), cache: "no-store" });
  } catch (error) {
    showSignIn(`Cannot reach the initiator (${error.message}).`);
    return;
  }
  if (response.status === 401) {
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn("The API key was not accepted (401 Unauthorized). Check it and try again.");
    return;
  }
  if (!response.ok) {
    showSignIn(`The initiator answered ${response.status}.`);
    return;
  }
  render(await response.json());
}

function render(spec) {
  element("sign-in").hidden = true;
  element("reference").hidden = false;
  element("forget-key").hidden = false;
  element("api-title").textContent = spec.info.title;
  element("api-version").textContent = `version ${spec.info.version} · OpenAPI ${spec.openapi}`;
  const cards = [];
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      cards.push(operationCard(path, method, operation));
    }
  }
  element("operations").replaceChildren(...cards);
}

function operationCard(path, method, operation) {
  const card = make("details", null, "operation");
  card.id = operation.operationId || `${method}-${path}`;
  const summary = make("summary");
  summary.append(
    make("span", method, `method method-${method}`),
    make("span", path, "path"),
    make("span", operation.summary || ""),
    make("span", operation.operationId || "", "operation-id muted"),
  );
  const body = make("div", null, "body");
  body.append(make("p", operation.description || ""));
  const parameters = operation.parameters || [];
  if (parameters.length) {
    body.append(make("h3", "Parameters"), parameterTable(parameters));
  }
  if (operation.requestBody) {
    const types = Object.keys(operation.requestBody.content || {}).join(", ");
    body.append(make("h3", "Request body"), make("p", `${operation.requestBody.description || ""} (${types})`));
  }
  body.append(make("h3", "Answers"), answerTable(operation.responses || {}));
  body.append(tryForm(path, method, parameters, Boolean(operation.requestBody)));
  card.append(summary, body);
  return card;
}

function parameterTable(parameters) {
  const table = make("table");
  const head = make("tr");
  head.append(make("th", "name"), make("th", "in"), make("th", "type"), make("th", "description"));
  table.append(head);
  for (const parameter of parameters) {
    const schema = parameter.schema || {};
    const type = schema.enum ? schema.enum.join(" | ") : schema.type || "";
    const row = make("tr");
    row.append(
      make("td", parameter.name + (parameter.required ? " *" : ""), "id"),
      make("td", parameter.in),
      make("td", type),
      make("td", parameter.description || ""),
    );
    table.append(row);
  }
  return table;
}

function answerTable(responses) {
  const table = make("table");
  for (const [code, answer] of Object.entries(responses)) {
    const row = make("tr");
    const types = Object.keys(answer.content || {}).join(", ");
    row.append(make("td", code, "number"), make("td", answer.description || ""), make("td", types, "muted"));
    table.append(row);
  }
  return table;
}

function tryForm(path, method, parameters, hasBody) {
  const form = make("form", null, "try");
  const inputs = parameters.map((parameter) => {
    const label = make("label", `${parameter.name} (${parameter.in})`);
    const input = make("input");
    input.name = parameter.name;
    input.dataset.in = parameter.in;
    label.append(input);
    form.append(label);
    return input;
  });
  let bodyInput = null;
  if (hasBody) {
    const label = make("label", "body (text/csv)");
    bodyInput = make("textarea");
    bodyInput.rows = 4;
    label.append(bodyInput);
    form.append(label);
  }
  const answer = make("pre", null, "answer");
  answer.hidden = true;
  form.append(make("button", "Send"), answer);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let target = path;
    const query = new URLSearchParams();
    const headers = authorization();
    for (const input of inputs) {
      if (input.value === "") {
        continue;
      }
      if (input.dataset.in === "path") {
        target = target.replace(`{${input.name}}`, encodeURIComponent(input.value));
      } else if (input.dataset.in === "query") {
        query.set(input.name, input.value);
      } else if (input.dataset.in === "header") {
        headers[input.name] = input.value;
      }
    }
    const options = { method: method.toUpperCase(), headers };
    if (bodyInput) {
      headers["Content-Type"] = "text/csv";
      options.body = bodyInput.value;
    }
    const url = query.toString() ? `${target}?${query}` : target;
    answer.hidden = false;
    try {
      const response = await fetch(url, options);
      const text = await response.text();
      answer.textContent = `${response.status} ${response.headers.get("content-type") || ""}\n\n${text}`;
    } catch (error) {
      answer.textContent = `failed: ${error.message}`;
    }
  });
  return form;
}

function submitKey(event) {
  event.preventDefault();
  const key = element("api-key").value.trim();
  if (!KEY_PATTERN.test(key)) {
    showMessage("key-error", "An API key is visible ASCII characters, without spaces.");
    return;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  element("api-key").value = "";
  load();
}

document.addEventListener("DOMContentLoaded", () => {
  element("key-form").addEventListener("submit", submitKey);
  element("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn();
  });
  load();
});
