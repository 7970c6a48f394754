// The dashboard's script: asks for the API key once, then polls /dashboard/live every second,
// asking only for the samples it does not have yet (live.js keeps and draws them).
//
// The key stays in sessionStorage (this tab only) and travels as a Bearer header. Every
// value from the server is written with textContent, never as HTML.
"use strict";

const KEY_STORAGE = "billing.apiKey";
const REFRESH_MS = 1000;
// An HTTP header carries visible ASCII only; a pasted key with a space or a newline is a typo.
const KEY_PATTERN = /^[\x21-\x7e]+$/;

let refreshTimer = null;

function element(id) {
  return document.getElementById(id);
}

function showMessage(id, message) {
  const box = element(id);
  box.textContent = message || "";
  box.hidden = !message;
}

function showSignIn(message) {
  clearTimeout(refreshTimer);
  element("board").hidden = true;
  element("forget-key").hidden = true;
  element("sign-in").hidden = false;
  showMessage("key-error", message);
  element("api-key").focus();
}

function showBoard() {
  element("sign-in").hidden = true;
  element("board").hidden = false;
  element("forget-key").hidden = false;
}

async function refresh() {
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (!key) {
    showSignIn();
    return;
  }
  let response;
  try {
    response = await fetch(`/dashboard/live?after=${window.BillingLive.lastSeq()}`, {
      headers: { Authorization: `Bearer ${key}` },
      cache: "no-store",
    });
  } catch (error) {
    showTransientError(`Cannot reach the initiator (${error.message}); retrying.`);
    return;
  }
  if (response.status === 401) {
    sessionStorage.removeItem(KEY_STORAGE);
    showSignIn("The API key was not accepted (401 Unauthorized). Check it and try again.");
    return;
  }
  if (!response.ok) {
    showTransientError(`The initiator answered ${response.status}; retrying.`);
    return;
  }
  const data = await response.json();
  showBoard();
  showMessage("fetch-error", "");
  render(data);
  scheduleRefresh();
}

// The last figures stay on screen under the message; the next refresh clears it.
function showTransientError(message) {
  showBoard();
  showMessage("fetch-error", message);
  scheduleRefresh();
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refresh, REFRESH_MS);
}

function render(data) {
  element("updated").textContent =
    `updated ${new Date(data.generated_at).toLocaleTimeString()} · ` +
    `reading ${data.age_seconds.toFixed(1)} s old · refreshes every second`;
  renderGate(data.gate);
  renderCounts(data.batch_counts);
  renderRows("batches", "no-batches", data.batches, batchCells, (p) => p.batch.batch_id);
  renderRows("processors", "no-processors", data.processors, processorCells, (p) => p.instance);
  window.BillingLive.absorb(data);
}

// The release gate: while it is held, processors take no work and open batches wait.
function renderGate(gate) {
  const badge = element("gate");
  badge.hidden = false;
  badge.textContent =
    gate === "held" ? "gate held: processors wait for a release" : "gate released";
  badge.className = `gate gate-${gate}`;
}

function renderCounts(counts) {
  const list = element("batch-counts");
  list.replaceChildren(
    ...Object.entries(counts).map(([status, count]) => {
      const item = document.createElement("li");
      item.textContent = `${status}: ${count}`;
      item.className = count === 0 ? "zero" : `status-${status}`;
      return item;
    }),
  );
}

function renderRows(tableId, emptyId, items, cellsOf, keyOf) {
  const body = element(tableId).querySelector("tbody");
  body.replaceChildren(
    ...items.map((item) => {
      const row = document.createElement("tr");
      row.dataset.key = keyOf(item);
      row.append(...cellsOf(item));
      return row;
    }),
  );
  element(emptyId).hidden = items.length > 0;
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) {
    td.className = className;
  }
  return td;
}

function batchCells(progress) {
  const batch = progress.batch;
  const chunks = batch.chunks;
  const closed = batch.timings.end_to_end_seconds !== null;
  const perSecond = progress.transactions_per_second;
  const waited = batch.timings.waiting_for_release_seconds;
  const status = batch.waiting_for_release ? `${batch.status} · waiting for release` : batch.status;
  return [
    cell(batch.batch_id, "id"),
    cell(new Date(batch.timings.received_at).toLocaleTimeString()),
    cell(batch.priority),
    cell(status, `status status-${batch.status}${batch.waiting_for_release ? " waiting" : ""}`),
    chunksCell(chunks),
    cell(batch.transactions.toLocaleString(), "number"),
    reconciledCell(batch.reconciled),
    timeCell(progress, closed, waited),
    cell(perSecond === null ? "—" : Math.round(perSecond).toLocaleString(), "number"),
  ];
}

// Processing time, and the wait for a release apart (it is no processing time).
function timeCell(progress, closed, waited) {
  let text = `${progress.processing_seconds.toFixed(1)} s${closed ? "" : " so far"}`;
  if (waited >= 0.05) {
    text += ` + ${waited.toFixed(1)} s waiting for release`;
  }
  return cell(text, "number");
}

// The counts as text, and a bar: applied chunks, those rated and on their way to the
// warehouse, and failed ones, out of the batch's total.
function chunksCell(chunks) {
  const td = document.createElement("td");
  td.className = "number chunks";
  const text = document.createElement("span");
  text.textContent = `${chunks.applied} / ${chunks.failed} / ${chunks.total}`;
  const waiting = Math.max((chunks.rated ?? chunks.applied) - chunks.applied, 0);
  if (waiting) {
    text.textContent += ` (+${waiting} rated)`;
  }
  const bar = document.createElement("div");
  bar.className = "progress";
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-valuemin", "0");
  bar.setAttribute("aria-valuemax", String(chunks.total));
  bar.setAttribute("aria-valuenow", String(chunks.applied + chunks.failed));
  const parts = { applied: chunks.applied, rated: waiting, failed: chunks.failed };
  for (const [kind, count] of Object.entries(parts)) {
    const part = document.createElement("div");
    part.className = kind;
    part.style.width = `${chunks.total ? (100 * count) / chunks.total : 0}%`;
    bar.append(part);
  }
  td.append(text, bar);
  return td;
}

function reconciledCell(reconciled) {
  if (reconciled === null) {
    return cell("—", "muted");
  }
  return reconciled ? cell("yes", "yes") : cell("NO", "no");
}

function processorCells(processor) {
  const p95 = processor.p95_latency_ms;
  return [
    cell(processor.instance, "id"),
    cell(`${processor.active_threads} / ${processor.total_threads}`, "number"),
    cell(processor.queue_depth.toLocaleString(), "number"),
    cell(String(processor.in_flight), "number"),
    cell(processor.handled.toLocaleString(), "number"),
    cell(String(processor.errors), processor.errors > 0 ? "number no" : "number"),
    cell(p95 === null ? "—" : `${p95.toFixed(1)} ms`, "number"),
    cell(`${Math.round(processor.beat_age_seconds)} s ago`, "number"),
  ];
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
  showMessage("key-error", "");
  refresh();
}

function forgetKey() {
  sessionStorage.removeItem(KEY_STORAGE);
  showSignIn();
}

document.addEventListener("DOMContentLoaded", () => {
  element("key-form").addEventListener("submit", submitKey);
  element("forget-key").addEventListener("click", forgetKey);
  refresh();
});
