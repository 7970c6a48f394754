// Small SVG line charts, drawn by hand: no library to vendor, no build step, works offline.
//
// drawLineChart(figure, {series, start, end, unit, gapMs, stacked}) replaces the chart inside
// `figure` (a <figure> with a <div class="plot"> and a <ul class="legend">). A series is
// {label, color, dashed, points: [[timeMs, value], ...]}; two points further apart than
// gapMs are not joined (nobody was watching in between: no line pretends to know). Stacked,
// each series is a band on top of the ones before it. Every <path class="series"> carries
// the series' own values, for a test or a curious person, without reading pixels:
// data-series, data-count, data-first, data-max and data-last.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const CHART_WIDTH = 560;
const CHART_HEIGHT = 150;
const MARGIN = { left: 44, right: 8, top: 8, bottom: 20 };
// Colour-blind-safe qualitative palette (Okabe-Ito), one colour per series in turn.
const PALETTE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000", "#f0e442"];

function paletteColor(index) {
  return PALETTE[index % PALETTE.length];
}

function svgElement(name, attributes) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, String(value));
  }
  return node;
}

// The smallest of 1, 2, 5 × 10^n at or above `value`: round numbers on the axis.
function niceMax(value) {
  if (!(value > 0)) {
    return 1;
  }
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= value) {
      return step * power;
    }
  }
  return 10 * power;
}

function formatValue(value) {
  if (value >= 1000) {
    return `${(value / 1000).toFixed(value >= 10000 ? 0 : 1)}k`;
  }
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function formatSpan(seconds) {
  return seconds >= 120 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`;
}

// The runs of points with no gap between neighbours: [[first index, last index], ...].
function runs(points, gapMs) {
  const found = [];
  points.forEach(([time], index) => {
    if (index === 0 || time - points[index - 1][0] > gapMs) {
      found.push([index, index]);
    } else {
      found[found.length - 1][1] = index;
    }
  });
  return found;
}

function coordinates(points, x, y) {
  return points.map(([time, value]) => `${x(time).toFixed(1)},${y(value).toFixed(1)}`);
}

// "M x,y L x,y …", starting a new stroke after each gap.
function lineData(points, x, y, gapMs) {
  const at = coordinates(points, x, y);
  return runs(points, gapMs)
    .map(([first, last]) => `M${at.slice(first, last + 1).join(" L")}`)
    .join(" ");
}

// The band between `base` and `tops` (same times), closed, one shape per run.
function bandData(base, tops, x, y, gapMs) {
  const upper = coordinates(tops, x, y);
  const lower = coordinates(base, x, y);
  return runs(tops, gapMs)
    .map(([first, last]) => {
      const back = lower.slice(first, last + 1).reverse();
      return `M${upper.slice(first, last + 1).join(" L")} L${back.join(" L")} Z`;
    })
    .join(" ");
}

// Each series on top of the ones before it (they share their times): the top is the total.
function stack(series) {
  let below = null;
  return series.map((line) => {
    const base = line.points.map(([time], i) => [time, below ? below[i][1] : 0]);
    const tops = line.points.map(([time, value], i) => [time, base[i][1] + value]);
    below = tops;
    return { ...line, base, tops };
  });
}

function drawLineChart(figure, { series, start, end, unit, gapMs = Infinity, stacked = false }) {
  const plotWidth = CHART_WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = CHART_HEIGHT - MARGIN.top - MARGIN.bottom;
  const span = Math.max(end - start, 1);
  const drawn = stacked ? stack(series) : series.map((line) => ({ ...line, tops: line.points }));
  const highest = Math.max(0, ...drawn.flatMap((s) => s.tops.map(([, value]) => value)));
  const top = niceMax(highest);
  const x = (time) => MARGIN.left + ((time - start) / span) * plotWidth;
  const y = (value) => MARGIN.top + plotHeight - (value / top) * plotHeight;

  const svg = svgElement("svg", {
    viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`,
    role: "img",
    "aria-label": figure.querySelector("figcaption")?.textContent || "chart",
  });
  for (const fraction of [0, 0.5, 1]) {
    const level = top * fraction;
    svg.append(
      svgElement("line", {
        x1: MARGIN.left, x2: CHART_WIDTH - MARGIN.right, y1: y(level), y2: y(level),
        class: fraction === 0 ? "axis" : "grid",
      }),
    );
    const label = svgElement("text", { x: MARGIN.left - 4, y: y(level) + 4, class: "tick", "text-anchor": "end" });
    label.textContent = formatValue(level);
    svg.append(label);
  }
  const left = svgElement("text", { x: MARGIN.left, y: CHART_HEIGHT - 4, class: "tick" });
  left.textContent = `${formatSpan(span / 1000)} ago`;
  const right = svgElement("text", { x: CHART_WIDTH - MARGIN.right, y: CHART_HEIGHT - 4, class: "tick", "text-anchor": "end" });
  right.textContent = unit ? `now · ${unit}` : "now";
  svg.append(left, right);

  const legend = figure.querySelector(".legend");
  legend.replaceChildren();
  drawn.forEach((line, index) => {
    const color = line.color || paletteColor(index);
    const values = line.points.map(([, value]) => value);
    if (line.base) {
      svg.append(svgElement("path", { d: bandData(line.base, line.tops, x, y, gapMs), class: "band", fill: color }));
    }
    const path = svgElement("path", {
      d: lineData(line.tops, x, y, gapMs),
      class: "series",
      fill: "none",
      stroke: color,
      "stroke-width": 2,
      "stroke-dasharray": line.dashed ? "5 3" : "none",
      "data-series": line.label,
      "data-count": values.length,
      "data-first": values.length ? values[0] : "",
      "data-max": values.length ? Math.max(...values) : "",
      "data-last": values.length ? values[values.length - 1] : "",
    });
    svg.append(path);
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = line.dashed ? "swatch dashed" : "swatch";
    swatch.style.borderColor = color;
    const last = values.length ? formatValue(values[values.length - 1]) : "—";
    item.append(swatch, document.createTextNode(`${line.label}: ${last}`));
    legend.append(item);
  });
  figure.querySelector(".plot").replaceChildren(svg);
}

window.BillingCharts = { drawLineChart, paletteColor };
