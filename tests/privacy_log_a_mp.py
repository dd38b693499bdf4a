# Writes tests/privacy_log_a_mp.h: dp_accounting test_compute_log_a_equals_mp's cases, log(A_alpha)
# by mpmath quadrature of its defining integral (the test's _compute_a_mp, verbatim).
# python3 tests/privacy_log_a_mp.py  (mpmath 1.3.0; a few minutes), then paste as {q, z, order, log_a},
import mpmath, sys
def a_mp(sigma, q, alpha):
    def mu0(x): return mpmath.npdf(x, mu=0, sigma=sigma)
    def ratio(x): return (1 - q) + q * mpmath.exp((2 * x - 1) / (2 * sigma**2))
    f = lambda z: mu0(z) * ratio(z) ** alpha
    a, _ = mpmath.quad(f, (-mpmath.inf, mpmath.inf), error=True, maxdegree=8)
    return a
params = [(1e-7,0.1,1.01),(1e-6,0.1,256),(1e-5,0.1,256.1),(1e-6,1,27),(1e-4,1.0,1.5),(1e-3,1.0,2),(0.01,10,20),(0.1,100,20.5),(0.99,0.1,256),(0.999,100,256.1)]
for q,s,o in params:
    a = a_mp(s,q,o)
    print(q, s, o, repr(float(mpmath.log(a))) if a >= sys.float_info.min else '-inf', flush=True)
