// The dashboard's charts: the samples of /dashboard/live, kept for the window, drawn as SVG.
//
// BillingLive.absorb(view) takes one answer of GET /dashboard/live?after=<lastSeq()>, adds its
// new samples, drops those older than the window and redraws every chart. The samples stay
// readable as BillingLive.samples (the browser test compares them with the API).
"use strict";

const MIN_SPAN_MS = 60_000; // a fresh history is drawn over at least a minute
const MAX_REQUEST_KINDS = 8;
// Samples further apart than this many intervals are not joined: the sampler slept between.
const GAP_SAMPLES = 3;

const live = {
  samples: [],
  queues: [],
  lastSeq() {
    return this.samples.length ? this.samples[this.samples.length - 1].seq : 0;
  },
  absorb(view) {
    this.queues = view.queues;
    const known = this.lastSeq();
    for (const sample of view.samples) {
      if (sample.seq > known) {
        this.samples.push({ ...sample, time: Date.parse(sample.taken_at) });
      }
    }
    if (!this.samples.length) {
      return;
    }
    const end = this.samples[this.samples.length - 1].time;
    const windowStart = end - view.window_seconds * 1000;
    this.samples = this.samples.filter((sample) => sample.time >= windowStart);
    const start = Math.min(this.samples[0].time, end - MIN_SPAN_MS);
    const gapMs = GAP_SAMPLES * view.sample_seconds * 1000;
    drawAll(this.samples, this.queues, { start, end, gapMs }, view);
  },
};

function drawAll(samples, queues, range, view) {
  const { drawLineChart } = window.BillingCharts;
  for (const priority of ["high", "normal", "low"]) {
    const partitions = queues.filter((q) => q.kind === "work" && q.priority === priority);
    drawLineChart(document.getElementById(`chart-depth-${priority}`), {
      ...range,
      unit: "messages",
      stacked: true, // the top is the priority's depth, each band a partition
      series: partitions.map((queue) => ({
        label: `partition ${queue.partition}`,
        points: samples.map((s) => [s.time, s.queue_depths[queue.name] ?? 0]),
      })),
    });
  }
  drawLineChart(document.getElementById("chart-depth-other"), {
    ...range,
    unit: "messages",
    series: otherQueueSeries(samples, queues),
  });
  drawLineChart(document.getElementById("chart-threads"), {
    ...range,
    unit: "threads",
    series: threadSeries(samples),
  });
  drawLineChart(document.getElementById("chart-throughput"), {
    ...range,
    unit: "transactions/s",
    series: [
      { label: "rated", points: samples.map((s) => [s.time, s.rated_per_second]) },
      { label: "applied", points: samples.map((s) => [s.time, s.applied_per_second]) },
    ],
  });
  drawLineChart(document.getElementById("chart-requests"), {
    ...range,
    unit: "requests/min",
    series: requestSeries(samples),
  });
  const latest = samples[samples.length - 1];
  const age = `${view.age_seconds.toFixed(1)} s old`;
  for (const caption of document.querySelectorAll("#charts .sampled-age")) {
    caption.textContent = `latest sample ${new Date(latest.time).toLocaleTimeString()}, ${age}`;
  }
  const cost = latest.cost_per_minute;
  document.getElementById("request-cost").textContent =
    cost === null || cost === undefined
      ? "Cost estimate: none (no price list)."
      : `Estimated cost of these requests: $${cost.toFixed(6)} per minute (Azure list prices, see billing cost).`;
}

// The results queue, every poison queue together, and each poison queue that held anything.
function otherQueueSeries(samples, queues) {
  const poison = queues.filter((q) => q.kind === "poison");
  const results = queues.find((q) => q.kind === "results");
  const series = [
    { label: "results", points: samples.map((s) => [s.time, s.queue_depths[results.name] ?? 0]) },
    {
      label: "poison (all)",
      dashed: true,
      points: samples.map((s) => [s.time, poison.reduce((sum, q) => sum + (s.queue_depths[q.name] ?? 0), 0)]),
    },
  ];
  for (const queue of poison) {
    if (samples.some((s) => (s.queue_depths[queue.name] ?? 0) > 0)) {
      series.push({ label: queue.name, points: samples.map((s) => [s.time, s.queue_depths[queue.name] ?? 0]) });
    }
  }
  return series;
}

// Per instance: the most threads active at once over each beat's interval (solid; the count
// at the beat alone misses threads that start and retire between two beats) and the threads
// started since it started (dashed).
function threadSeries(samples) {
  const instances = [...new Set(samples.flatMap((s) => s.processors.map((p) => p.instance)))].sort();
  return instances.flatMap((instance, index) => {
    const color = window.BillingCharts.paletteColor(index);
    const readings = samples
      .map((s) => [s.time, s.processors.find((p) => p.instance === instance)])
      .filter(([, p]) => p);
    return [
      {
        label: `${instance} active (peak per beat)`,
        color,
        points: readings.map(([t, p]) => [t, p.peak_active]),
      },
      { label: `${instance} started`, color, dashed: true, points: readings.map(([t, p]) => [t, p.total]) },
    ];
  });
}

function requestSeries(samples) {
  const totals = new Map();
  for (const sample of samples) {
    for (const [kind, rate] of Object.entries(sample.requests_per_minute)) {
      totals.set(kind, (totals.get(kind) || 0) + rate);
    }
  }
  const kinds = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, MAX_REQUEST_KINDS);
  // A kind counted for a caller (queue.count@dashboard: the dashboard's own depth queries)
  // is labelled with it, so watching is told apart from the pipeline's work.
  return kinds.map(([kind]) => ({
    label: kind.replace(/@(.+)$/, " (by the $1)"),
    points: samples.map((s) => [s.time, s.requests_per_minute[kind] ?? 0]),
  }));
}

window.BillingLive = live;
