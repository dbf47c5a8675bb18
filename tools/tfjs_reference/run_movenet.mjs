// Run the ORIGINAL MoveNet MultiPose (or SinglePose Thunder) TF.js graph model
// on raw RGB inputs and dump the head outputs + the final output as raw float32 files.
//
// Usage:
//   node run_movenet.mjs MODEL_JSON IN_DIR OUT_DIR [--backend=wasm|cpu] [--model=multipose|thunder]
//
// --model picks the table of graph nodes to dump (default multipose).
//
// IN_DIR holds `<name>.u8` files: 256*256*3 uint8, RGB, row-major (HWC).
// For each, OUT_DIR receives `<name>.<short>.f32` (little-endian float32,
// NHWC exactly as TF.js returns them) and `<name>.json` (shapes, backend,
// versions). The model is loaded from the local json + bin only (no network).

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import * as tf from '@tensorflow/tfjs-core';
import * as tfconv from '@tensorflow/tfjs-converter';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';

const require = createRequire(import.meta.url);
const HERE = path.dirname(fileURLToPath(import.meta.url));

const SIZE = 256;

// short name -> graph node name (checked against modelTopology.node below)
const MULTIPOSE_NODES = {
  centre: 'StatefulPartitionedCall/center_0/conv2d_4/BiasAdd',
  heatmap: 'StatefulPartitionedCall/kpt_heatmap_0/conv2d_7/BiasAdd',
  regress: 'StatefulPartitionedCall/kpt_regress_0/conv2d_8/BiasAdd',
  offset: 'StatefulPartitionedCall/kpt_offset_0/conv2d_9/BiasAdd',
  box_scale: 'StatefulPartitionedCall/box_scale_0/conv2d_5/BiasAdd',
  box_offset: 'StatefulPartitionedCall/box_offset_0/conv2d_6/BiasAdd',
  fpn: 'StatefulPartitionedCall/center_net_mobile_net_v2fpn_feature_extractor/model_1/re_lu_2/Relu',
  final: 'Identity',
};

// MoveNet SinglePose Thunder: four heads (no box heads), numbered differently.
const THUNDER_NODES = {
  centre: 'StatefulPartitionedCall/center_0/conv2d_4/BiasAdd',
  heatmap: 'StatefulPartitionedCall/kpt_heatmap_0/conv2d_5/BiasAdd',
  regress: 'StatefulPartitionedCall/kpt_regress_0/conv2d_6/BiasAdd',
  offset: 'StatefulPartitionedCall/kpt_offset_0/conv2d_7/BiasAdd',
  fpn: 'StatefulPartitionedCall/center_net_mobile_net_v2fpn_feature_extractor/model_1/re_lu_2/Relu',
  final: 'Identity',
};

const MODELS = { multipose: MULTIPOSE_NODES, thunder: THUNDER_NODES };

function parseArgs(argv) {
  const pos = [];
  const opt = { backend: 'wasm', model: 'multipose' };
  for (const a of argv) {
    if (a.startsWith('--backend=')) opt.backend = a.slice('--backend='.length);
    else if (a.startsWith('--model=')) opt.model = a.slice('--model='.length);
    else pos.push(a);
  }
  if (pos.length !== 3 || !(opt.model in MODELS)) {
    console.error('usage: node run_movenet.mjs MODEL_JSON IN_DIR OUT_DIR [--backend=wasm|cpu] [--model=multipose|thunder]');
    process.exit(2);
  }
  return { modelJson: pos[0], inDir: pos[1], outDir: pos[2], ...opt };
}

// IOHandler that reads model.json + its weight files from the local disk.
function localFileHandler(modelJsonPath) {
  return {
    load: async () => {
      const json = JSON.parse(fs.readFileSync(modelJsonPath, 'utf8'));
      const dir = path.dirname(modelJsonPath);
      const weightSpecs = [];
      const buffers = [];
      for (const group of json.weightsManifest) {
        weightSpecs.push(...group.weights);
        for (const p of group.paths) buffers.push(fs.readFileSync(path.join(dir, p)));
      }
      const all = Buffer.concat(buffers);
      const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
      return {
        modelTopology: json.modelTopology,
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
        signature: json.signature,
        userDefinedMetadata: json.userDefinedMetadata,
        modelInitializer: json.modelInitializer,
        weightSpecs,
        weightData,
      };
    },
  };
}

async function initBackend(name) {
  if (name === 'wasm') {
    // Single-threaded SIMD build, wasm binaries shipped inside the npm package.
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    const distDir = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
    setWasmPaths(distDir);
  }
  const ok = await tf.setBackend(name);
  if (!ok) throw new Error(`could not initialise backend ${name}`);
  await tf.ready();
  return tf.getBackend();
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const backend = await initBackend(args.backend);
  const NODES = MODELS[args.model];

  const modelJson = JSON.parse(fs.readFileSync(args.modelJson, 'utf8'));
  const names = new Set(modelJson.modelTopology.node.map((n) => n.name));
  for (const [k, v] of Object.entries(NODES)) {
    if (!names.has(v)) throw new Error(`node for ${k} not in graph: ${v}`);
  }

  const model = await tfconv.loadGraphModel(localFileHandler(args.modelJson));
  fs.mkdirSync(args.outDir, { recursive: true });

  const inputs = fs.readdirSync(args.inDir).filter((f) => f.endsWith('.u8')).sort();
  if (inputs.length === 0) throw new Error(`no *.u8 files in ${args.inDir}`);
  const shorts = Object.keys(NODES);
  const outNames = shorts.map((k) => NODES[k]);

  for (const file of inputs) {
    const name = file.slice(0, -3);
    const raw = fs.readFileSync(path.join(args.inDir, file));
    if (raw.length !== SIZE * SIZE * 3) throw new Error(`${file}: expected ${SIZE * SIZE * 3} bytes, got ${raw.length}`);
    const data = Int32Array.from(raw);
    const input = tf.tensor4d(data, [1, SIZE, SIZE, 3], 'int32');
    const outs = model.execute(input, outNames);
    const meta = {
      name, backend, model: args.model, tfjs_version: tf.version_core,
      versions: { core: tf.version_core, converter: tfconv.version_converter },
      nodes: {}, shapes: {},
    };
    for (let i = 0; i < shorts.length; i++) {
      const t = outs[i];
      if (t.dtype !== 'float32') throw new Error(`${shorts[i]}: dtype ${t.dtype}`);
      const arr = await t.data();
      const buf = Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength); // host is little-endian
      fs.writeFileSync(path.join(args.outDir, `${name}.${shorts[i]}.f32`), buf);
      meta.nodes[shorts[i]] = NODES[shorts[i]];
      meta.shapes[shorts[i]] = t.shape;
    }
    fs.writeFileSync(path.join(args.outDir, `${name}.json`), JSON.stringify(meta, null, 1));
    tf.dispose([input, ...outs]);
    console.log(`${name}: done (${backend})`);
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
