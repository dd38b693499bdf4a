/* Which clients each rank of an MPI run trains (split.h).
 *
 * Clients differ in size (FEMNIST's writers have 1 to 9 batches), so equal
 * numbers of clients per rank leave one rank waiting for the other at every
 * aggregation. Any assignment of leaves to ranks gives the same bits, so the
 * assignment is free to chase balance; it only costs messages and memory: a rank
 * keeps and sends one partial sum per complete block of the tree it holds, few
 * for a contiguous run of leaves (O(log2 leaves)), up to one per leaf for
 * scattered ones. Hence the best contiguous cut, then a few moves or swaps of
 * single leaves where each gains 1% or more. Every rank computes the same
 * assignment from the same work. */
#include <string.h>

#include "exec/split.h"

void fedc__split_even(fedc__split *s, int64_t clients, int ranks) {
    s->clients = clients;
    s->by_group = false;
    s->leaves = fedc__agg_leaves(clients);
    for (int j = 0; j < s->leaves; j++) s->owner[j] = (int)(((int64_t)(j + 1) * ranks - 1) / s->leaves);
}

/* The best cut of the leaves into `ranks` contiguous runs (a run may be empty):
 * dynamic programming over (ranks, leaves), ranks <= leaves. */
static void contiguous(const double *leaf, int leaves, int ranks, int *owner) {
    double prefix[FEDC__AGG_LEAVES + 1] = {0};
    for (int j = 0; j < leaves; j++) prefix[j + 1] = prefix[j] + leaf[j];
    /* best[r][j]: the least largest work of leaves [0, j) on ranks [0, r] */
    double best[FEDC__AGG_LEAVES][FEDC__AGG_LEAVES + 1]; /* 50 KB of stack at most */
    int cut[FEDC__AGG_LEAVES][FEDC__AGG_LEAVES + 1];
    for (int j = 0; j <= leaves; j++) best[0][j] = prefix[j], cut[0][j] = 0;
    for (int r = 1; r < ranks; r++)
        for (int j = 0; j <= leaves; j++) {
            best[r][j] = best[r - 1][j], cut[r][j] = j;
            for (int c = 0; c < j; c++) {
                double m = best[r - 1][c] > prefix[j] - prefix[c] ? best[r - 1][c] : prefix[j] - prefix[c];
                if (m < best[r][j]) best[r][j] = m, cut[r][j] = c;
            }
        }
    for (int r = ranks - 1, j = leaves; r >= 0; r--) {
        for (int k = cut[r][j]; k < j; k++) owner[k] = r;
        j = cut[r][j];
    }
}

static double largest(const double *load, int ranks) {
    double most = 0;
    for (int q = 0; q < ranks; q++)
        if (load[q] > most) most = load[q];
    return most;
}

/* The largest rank's work. */
static double work_of(const double *leaf, int leaves, int ranks, const int *owner) {
    double load[FEDC__AGG_LEAVES] = {0};
    for (int j = 0; j < leaves; j++) load[owner[j]] += leaf[j];
    return largest(load, ranks);
}

/* From the contiguous cut: while it lowers the largest rank's work by 1% or more,
 * the best move of one leaf, or swap of two, between the most and the least
 * loaded ranks. Each step scatters a leaf or two (two more messages, about), so
 * small gains are not worth it: a cohort of many leaves is balanced by the cut. */
static void refine(const double *leaf, int leaves, int ranks, int *owner) {
    double load[FEDC__AGG_LEAVES] = {0};
    for (int j = 0; j < leaves; j++) load[owner[j]] += leaf[j];
    for (int step = 0; step < 4 * FEDC__AGG_LEAVES; step++) {
        int hi = 0, lo = 0;
        for (int q = 1; q < ranks; q++) {
            if (load[q] > load[hi]) hi = q;
            if (load[q] < load[lo]) lo = q;
        }
        /* moving d from hi to lo leaves max(load[hi] - d, load[lo] + d): best d near half the gap */
        double gap = load[hi] - load[lo], best = 0;
        int a = -1, b = -1;
        for (int j = 0; j < leaves; j++) {
            if (owner[j] != hi) continue;
            for (int k = -1; k < leaves; k++) {
                if (k >= 0 && owner[k] != lo) continue;
                double d = leaf[j] - (k >= 0 ? leaf[k] : 0), gain = d < gap - d ? d : gap - d;
                if (gain > best) best = gain, a = j, b = k;
            }
        }
        if (a < 0) return;
        double before = largest(load, ranks), d = leaf[a] - (b >= 0 ? leaf[b] : 0);
        load[hi] -= d, load[lo] += d;
        if (largest(load, ranks) > 0.99 * before) return; /* not worth the messages (and undone) */
        owner[a] = lo;
        if (b >= 0) owner[b] = hi;
    }
}

void fedc__split_balanced(fedc__split *s, int64_t clients, int ranks, const double *work) {
    fedc__split_even(s, clients, ranks);
    if (ranks <= 1 || ranks >= s->leaves) return; /* one leaf per rank at most: nothing to balance */
    double leaf[FEDC__AGG_LEAVES] = {0}, total = 0;
    for (int j = 0; j < s->leaves; j++)
        for (int64_t i = fedc__agg_leaf_start(clients, j); i < fedc__agg_leaf_start(clients, j + 1); i++) leaf[j] += work[i];
    for (int j = 0; j < s->leaves; j++) total += leaf[j];
    if (!(total > 0)) return; /* no work anywhere: the even split */
    int cut[FEDC__AGG_LEAVES];
    contiguous(leaf, s->leaves, ranks, cut);
    if (work_of(leaf, s->leaves, ranks, cut) < work_of(leaf, s->leaves, ranks, s->owner)) /* else: keep the even split */
        memcpy(s->owner, cut, sizeof cut);
    refine(leaf, s->leaves, ranks, s->owner);
}

/* Groups. A group's sums are its own tree, whose leaves are not the cohort's:
 * split inside a group, a rank would hold a part of one of its leaves, and a
 * leaf's running sum cannot be cut. So the units are runs of whole groups
 * between the group edges that are also leaf edges (every edge, when the cohort
 * has 64 clients or fewer), and each rank runs a contiguous run of units: every
 * group's tree, and every leaf of the cohort's, is summed whole on one rank. */
void fedc__split_groups(fedc__split *s, int64_t clients, int ranks, const int *group_start, int groups,
                        const double *work) {
    fedc__split_even(s, clients, ranks);
    s->by_group = true;
    int first[FEDC__AGG_LEAVES + 1], units = 0; /* unit u is leaves [first[u], first[u + 1]) */
    first[units++] = 0;
    for (int g = 1; g <= groups && group_start[g] < clients; g++) {
        int j = fedc__agg_leaf_of(clients, group_start[g]);
        if (fedc__agg_leaf_start(clients, j) == group_start[g] && j > first[units - 1]) first[units++] = j;
    }
    first[units] = s->leaves;
    double unit[FEDC__AGG_LEAVES] = {0}, total = 0;
    for (int pass = 0; pass < 2 && !(total > 0); pass++) /* the work; if none anywhere, the clients */
        for (int u = 0; u < units; u++) {
            unit[u] = 0;
            for (int64_t i = fedc__agg_leaf_start(clients, first[u]); i < fedc__agg_leaf_start(clients, first[u + 1]); i++)
                unit[u] += pass == 0 && work ? work[i] : 1;
            total += unit[u];
        }
    int owner[FEDC__AGG_LEAVES];
    if (ranks >= units)
        for (int u = 0; u < units; u++) owner[u] = u;
    else
        contiguous(unit, units, ranks, owner);
    for (int u = 0; u < units; u++)
        for (int j = first[u]; j < first[u + 1]; j++) s->owner[j] = owner[u];
}

int fedc__split_group_owner(const fedc__split *s, const int *group_start, int g) {
    return s->owner[fedc__agg_leaf_of(s->clients, group_start[g])];
}

int fedc__split_clients(const fedc__split *s, int rank, int *clients) {
    int n = 0;
    for (int j = 0; j < s->leaves; j++)
        if (s->owner[j] == rank)
            for (int64_t i = fedc__agg_leaf_start(s->clients, j); i < fedc__agg_leaf_start(s->clients, j + 1); i++)
                clients[n++] = (int)i;
    return n;
}
