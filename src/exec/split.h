/* split.h — which clients each rank of an MPI run trains (internal).
 *
 * The unit is a leaf of the aggregations' tree (exec.h): a rank runs whole
 * leaves, so its partial sums are complete blocks of the tree, and the result does
 * not depend on which rank ran which leaf (src/exec/aggregate.c). */
#ifndef FEDC_EXEC_SPLIT_H
#define FEDC_EXEC_SPLIT_H

#include "exec/exec.h"

typedef struct fedc__split {
    int64_t clients;
    int leaves;
    int owner[FEDC__AGG_LEAVES]; /* the rank that runs leaf j */
    bool by_group;               /* whole groups per rank (fedc__split_groups) */
} fedc__split;

/* Contiguous runs of leaves of about equal numbers of clients: rank r runs leaves
 * [L r / ranks, L (r+1) / ranks). */
void fedc__split_even(fedc__split *s, int64_t clients, int ranks);
/* Leaves to ranks so that the largest rank's work (the sum of work[i] over its
 * clients) is small: the best contiguous cut, then moves or swaps of single leaves
 * between ranks while each lowers it by 1% or more. */
void fedc__split_balanced(fedc__split *s, int64_t clients, int ranks, const double *work);
/* Whole groups to ranks, for a cohort in groups (group g's clients are
 * [group_start[g], group_start[g + 1]); those after the last group in none): a
 * rank runs contiguous runs of groups that begin and end at leaves' edges, so
 * that each group's sums (aggregate.c: a tree per group) are whole on one rank
 * and the cohort's are whole blocks of leaves. Groups whose edges fall inside a
 * leaf go with their neighbours. The cut that evens the ranks' work best (work:
 * per client, or NULL: the clients). */
void fedc__split_groups(fedc__split *s, int64_t clients, int ranks, const int *group_start, int groups,
                        const double *work);
/* The rank that runs group g of a split by group. */
int fedc__split_group_owner(const fedc__split *s, const int *group_start, int g);
/* The clients that `rank` runs, in increasing order, into `clients` (room for
 * s->clients); returns how many. */
int fedc__split_clients(const fedc__split *s, int rank, int *clients);

#endif
