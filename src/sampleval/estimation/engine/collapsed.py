"""The collapsed-strata variance weights of a stratified simple random sample.

With few draws per stratum (``stratified``'s default is two), a stratum's within-stratum
variance estimate is 0 whenever its draws agree, which on a sparse topic is when both miss its
one relevant document, exactly the samples whose estimate is off. Collapsing strata (Cochran,
*Sampling Techniques*, 3rd ed., 1977, sec. 5A.12, "collapsed strata"; Wolter, *Introduction
to Variance Estimation*, 2nd ed., 2007, sec. 2.5) groups neighbouring strata and treats each
group as one stratum: the variance is taken between all the group's units, so it is not 0
when one stratum of the group finds something and the other does not, and it is conservative
(biased up by the spread between the group's stratum means) where neighbouring strata differ.

Groups: the strata sampled in part (0 < n_h < N_h), in the order of their codes (for
``stratified``, decreasing prior: neighbours have close inclusion probabilities), paired
(1, 2), (3, 4), ...; with an odd count the last three form one group; a lone stratum is its
own group. A census stratum (n_h = N_h) has no variance and joins no group.

On the HT-expanded values x_i = z_i/pi_i of a group g of n_g units (every judged unit of its
strata, those with z = 0 included) with finite-population factors c_i = 1 - n_h/N_h of their
strata, the variance is n_g/(n_g - 1) sum_{i in g} c_i (x_i - x-bar_g)^2, x-bar_g the group's
mean (the stratified SRS estimator, sum_h (1 - f_h) n_h/(n_h - 1) sum_i (x_i - x-bar_h)^2,
with the group for the stratum). As a quadratic form x'Dx on the units with z != 0 (the zeros
enter only through n_g and C_g = sum_{i in g} c_i = sum_h n_h c_h):

    D_ij = n_g/(n_g - 1) (c_i 1{i = j} - (c_i + c_j)/n_g + C_g/n_g^2)   for i, j in g,

and 0 across groups; a group of one draw adds nothing. A group of one stratum gives
D = the design's own (1 - pi_i pi_j/pi_ij) weights.
"""

from __future__ import annotations

import numpy as np


def collapsed_groups(sizes: np.ndarray, n_sampled: np.ndarray) -> np.ndarray:
    """Each stratum's group (``-1``: a census or an unsampled stratum, in no group), from
    the strata's sizes N_h and draws n_h, as the module docstring pairs them."""
    sampled = np.flatnonzero((n_sampled > 0) & (n_sampled < sizes))
    group = np.full(len(sizes), -1, dtype=np.int64)
    pairs = np.arange(len(sampled)) // 2
    if len(sampled) % 2 and len(sampled) > 1:
        pairs[-1] = pairs[-2]  # the odd one out joins the last pair
    group[sampled] = pairs
    return group


def collapsed_delta(stratum: np.ndarray, sizes: np.ndarray, n_sampled: np.ndarray
                    ) -> np.ndarray:
    """The ``[m, m]`` weights D of the collapsed-strata variance x'Dx (module docstring) of
    m judged units with z != 0 in strata ``stratum``, the strata's sizes N_h ``sizes`` and
    draws n_h ``n_sampled``."""
    group_of = collapsed_groups(sizes, n_sampled)
    n_groups = int(group_of.max(initial=-1)) + 1
    if n_groups == 0:
        return np.zeros((len(stratum), len(stratum)))
    member = group_of >= 0
    factor = np.where(member, 1.0 - np.divide(n_sampled, sizes, out=np.ones(len(sizes)),
                                              where=sizes > 0), 0.0)
    n_g = np.bincount(group_of[member], weights=n_sampled[member], minlength=n_groups)
    c_g = np.bincount(group_of[member], weights=(n_sampled * factor)[member],
                      minlength=n_groups)
    g = group_of[stratum]
    c = factor[stratum]
    inside = (g >= 0)[:, None] & (g[:, None] == g[None, :])
    gg = np.where(g >= 0, g, 0)
    n = n_g[gg]
    scale = np.divide(n, n - 1.0, out=np.zeros(len(n)), where=n > 1)
    d = (np.diag(c) - (c[:, None] + c[None, :]) / n[:, None]
         + (c_g[gg] / (n * n))[:, None])
    return np.where(inside, scale[:, None] * d, 0.0)
