"""from_forward with and without multiscale=True on seeded deblurring problems:
mean PSNR per prior and representation (the table in docs/performance.md).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_multiscale_study.py
"""
import numpy as np
import fieldkit.nefi as nefi
nefi.set_num_threads(1)
def blur1d(n, seed):
    i=np.arange(n)
    A=np.exp(-0.5*((i[:,None]-i[None,:])/2.0)**2); A/=A.sum(1,keepdims=True)
    t=(i+0.5)/n
    rng=np.random.default_rng(seed)
    gt=sum(rng.uniform(0.5,1.5)*np.exp(-0.5*((t-rng.uniform(0.15,0.85))/rng.uniform(0.03,0.08))**2) for _ in range(3))
    y=A@gt; y=y+0.01*y.max()*rng.standard_normal(n)
    return A,gt,y
def blur2d(n, seed):
    i=np.arange(n)
    b=np.exp(-0.5*((i[:,None]-i[None,:])/1.5)**2); b/=b.sum(1,keepdims=True)
    rng=np.random.default_rng(seed)
    u,v=np.meshgrid((i+0.5)/n,(i+0.5)/n,indexing="ij")
    gt=0.2+0.6*((u-rng.uniform(.3,.7))**2+(v-rng.uniform(.3,.7))**2<0.05)+0.2*v
    y=b@gt@b.T; y=y+0.01*y.max()*rng.standard_normal(y.shape)
    return b,gt,y
def psnr(x, g):
    return 10 * np.log10(g.max() ** 2 / np.mean((x - g) ** 2))


for prior in ["nonnegative + smooth","nonnegative + tv"]:
  for ms in [False,True]:
    for rep in ["neural","hash"]:
      res=[]
      for seed in range(4):
        A,gt,y=blur1d(128,seed)
        r=nefi.from_forward(A,y,prior=prior,multiscale=ms,representation=rep).solve()
        res.append(psnr(r["reconstruction"],gt))
      res2=[]
      for seed in range(2):
        b,gt,y=blur2d(48,seed)
        r=nefi.from_forward(lambda x:b@x@b.T,y,adjoint=lambda g:b.T@g@b,prior=prior,multiscale=ms,representation=rep).solve()
        res2.append(psnr(r["reconstruction"],gt))
      print(prior, "ms" if ms else "single", rep, "1d %.2f"%np.mean(res), "2d %.2f"%np.mean(res2))
