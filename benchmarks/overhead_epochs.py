"""Epoch-level A/B of the callback's cost on one backend: fastest and median epoch, per variant.

    KERAS_BACKEND=jax python benchmarks/overhead_epochs.py

Fits of 3 epochs (the first one dropped: compilation, run start) rotate through the variants six
times, so slow phases of a shared machine hit each variant alike. Complements overhead.py,
whose whole-fit ratios include each run's fixed start and end costs.
"""
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras
import numpy as np

import advisor

x=np.random.rand(64*1500,128).astype("float32"); y=np.random.rand(64*1500,1).astype("float32")
m=keras.Sequential([keras.Input((128,)),keras.layers.Dense(512,activation="relu"),keras.layers.Dense(512,activation="relu"),keras.layers.Dense(1)]); m.compile("adam","mse")
times={}
class T(keras.callbacks.Callback):
    def __init__(s,k): super().__init__(); s.k=k
    def on_epoch_begin(s,e,l=None): s.t=time.perf_counter()
    def on_epoch_end(s,e,l=None):
        if e>0: times.setdefault(s.k,[]).append(time.perf_counter()-s.t)
variants={
 "none": lambda: [],
 "full": lambda: [advisor.AdvisorCallback(runs_dir="/tmp/jo", log_every_s=None, baseline=None)],
 "no-telemetry": lambda: [advisor.AdvisorCallback(runs_dir="/tmp/jo", log_every_s=None, telemetry=False, baseline=None)],
}
m.fit(x,y,batch_size=64,epochs=1,verbose=0)
for i in range(6):
    for k,f in variants.items():
        m.fit(x,y,batch_size=64,epochs=3,verbose=0,callbacks=[T(k),*f()],shuffle=False)
for k in variants: print(k, "min %.1f ms  median %.1f ms" % (min(times[k])*1000, statistics.median(times[k])*1000))
