"""Decoder time per frame, with the peak cell's own offset and with the offsets' vote (vote radius 0 / 2, the
default), on the shipped network's
outputs for 20 frames of the openpose street clip (9-13 people), one thread; medians of 5 passes, each
setting read twice, in turn. studies/offset-vote.md (the centre read it was also timed against
there left the decoder in issue #51).

    python studies/tools/decoder_speed.py
"""
import time, numpy as np, torch, av
from posetracker.model.weights import load_posenet
from posetracker.model.preprocess import letterbox, to_tensor
from posetracker.decoding import TreeDecoder
torch.set_num_threads(1)
net = load_posenet("models/posenet-human18.safetensors").eval()
c = av.open("../shared/data/video/video_openpose_examples/video.avi")
outs = []
for i, f in enumerate(c.decode(video=0)):
    if i % 5: continue
    img, _ = letterbox(f.to_ndarray(format="rgb24"), 256)
    with torch.inference_mode():
        o = net(to_tensor(img[None])[:, None])
    outs.append({k: o[k][0, 0].numpy() for k in ("heatmaps", "offsets", "vectors", "depth") if k in o})
    if len(outs) >= 20: break
res = {}
for r in (0, 2) * 2:
    d = TreeDecoder(net.spec, stride=net.stride, max_people=30, vote_radius=r)
    ts = []
    for rep in range(5):
        for o in outs:
            t = time.perf_counter(); p = d.decode(o); ts.append(time.perf_counter() - t)
    res.setdefault(f"vote {r}", []).append(np.median(ts) * 1000)
print({k: [round(float(x), 2) for x in v] for k, v in res.items()}, "people/frame", p.num_people)
