#!/usr/bin/env node
// Times one ONNX model in ONNX Runtime (the npm package onnxruntime-node, CPU
// execution provider) for scripts/bench/onnx_bench.py.
//
// Usage: node ort_run.js SPEC.json
// SPEC: {"ort": DIR holding node_modules/onnxruntime-node, "model": FILE.onnx,
//        "threads": N, "warmup": W, "iterations": K, "out_dir": DIR,
//        "inputs": [{"name", "dtype": "float32"|"int64", "shape": [...], "file": raw little-endian bytes}]}
// Prints one JSON line: version, create_ms, per-run latency (min, median, mean, max
// over the K timed runs after W untimed ones), rss_before_ort (bytes, the Node host
// before onnxruntime is loaded), max_rss (bytes, the process's peak) and the outputs,
// each written to out_dir as raw bytes with its dtype and shape.
'use strict';
const fs = require('fs');
const path = require('path');

const TYPED = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, float64: Float64Array};

function vmHwm() {
  // Peak resident set of this process, from the kernel (bytes).
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const rssBefore = process.memoryUsage().rss;
  const ort = require(path.join(spec.ort, 'node_modules', 'onnxruntime-node'));
  const version = require(path.join(spec.ort, 'node_modules', 'onnxruntime-node', 'package.json')).version;

  const feeds = {};
  for (const inp of spec.inputs) {
    const T = TYPED[inp.dtype];
    if (!T) throw new Error(`input ${inp.name}: dtype ${inp.dtype} not handled`);
    const buf = fs.readFileSync(inp.file);
    // Copy into a fresh ArrayBuffer: a Buffer's offset need not be aligned for the element type.
    const data = new T(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    feeds[inp.name] = new ort.Tensor(inp.dtype, data, inp.shape);
  }

  let t0 = performance.now();
  const session = await ort.InferenceSession.create(spec.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const createMs = performance.now() - t0;

  let out;
  for (let i = 0; i < spec.warmup; i++) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < spec.iterations; i++) {
    t0 = performance.now();
    out = await session.run(feeds);
    times.push(performance.now() - t0);
  }
  if (out === undefined) out = await session.run(feeds);  // iterations = warmup = 0: one untimed run for the outputs
  const maxRss = vmHwm();

  const outputs = [];
  fs.mkdirSync(spec.out_dir, {recursive: true});
  session.outputNames.forEach((name, i) => {
    const t = out[name];
    const file = path.join(spec.out_dir, `out${i}.bin`);
    const d = t.data;
    fs.writeFileSync(file, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    outputs.push({name, dtype: t.type, shape: t.dims.map(Number), file});
  });

  const s = [...times].sort((a, b) => a - b);
  const n = s.length;
  const median = n === 0 ? null : (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2);
  console.log(JSON.stringify({
    version, create_ms: createMs, runs: n,
    min_ms: n ? s[0] : null, median_ms: median, mean_ms: n ? s.reduce((a, b) => a + b, 0) / n : null,
    max_ms: n ? s[n - 1] : null,
    rss_before_ort: rssBefore, max_rss: maxRss, outputs,
  }));
  await session.release();
}

main().catch((e) => {
  console.error(`ort_run.js: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
