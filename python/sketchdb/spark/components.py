"""Connected components in plain DataFrame operations: alternating large-star and small-star
(Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014).

Edges are undirected; node ids may be of any orderable Spark type (strings, integers). Both
operations keep the components and shrink every node's pointer towards the smallest id of
its component; at the fixed point every edge is ``(node, smallest id of its component)``.

* large-star: each node ``u`` with neighbourhood ``N(u)`` and ``m = min(N(u) + u)`` links
  every neighbour ``v > u`` to ``m``;
* small-star: each node ``u`` with smaller neighbours ``S(u)`` and ``m = min(S(u) + u)``
  links every node of ``S(u) + u`` other than ``m`` to ``m``.

Edges are kept canonical as ``(hi, lo)`` with ``hi > lo`` and without duplicates. A round is
one large-star then one small-star; the loop ends when a round changes no edge. Each round's
result is checkpointed (reliable checkpoints when the SparkContext has a checkpoint
directory, local ones otherwise), so the lineage stays one round deep.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


@dataclass
class ComponentsResult:
    """``assignment``: one row ``(id, cluster)`` per node that has an edge, ``cluster`` the
    smallest id of its component (the root maps to itself); ``rounds``: rounds until no
    edge changed (the last one included)."""

    assignment: DataFrame
    rounds: int


def _canonical(edges: DataFrame) -> DataFrame:
    """(hi, lo) with hi > lo, self-loops dropped, duplicates dropped."""
    return (
        edges.where(F.col("a") != F.col("b"))
        .select(F.greatest("a", "b").alias("hi"), F.least("a", "b").alias("lo"))
        .distinct()
    )


def large_star(edges: DataFrame) -> DataFrame:
    """One large-star step over canonical edges (hi, lo); returns canonical edges."""
    both = edges.select(F.col("hi").alias("u"), F.col("lo").alias("v")).unionByName(
        edges.select(F.col("lo").alias("u"), F.col("hi").alias("v"))
    )
    m = both.groupBy("u").agg(F.least(F.min("v"), F.first("u")).alias("m"))
    out = both.where(F.col("v") > F.col("u")).join(m, "u").select(F.col("v").alias("a"), F.col("m").alias("b"))
    return _canonical(out)


def small_star(edges: DataFrame) -> DataFrame:
    """One small-star step over canonical edges (hi, lo); returns canonical edges."""
    m = edges.groupBy("hi").agg(F.min("lo").alias("m"))
    # Each smaller neighbour `lo` of `hi`, and `hi` itself, links to m (m itself drops as a self-loop).
    linked = edges.join(m, "hi").select(F.col("lo").alias("a"), F.col("m").alias("b"))
    roots = m.select(F.col("hi").alias("a"), F.col("m").alias("b"))
    return _canonical(linked.unionByName(roots))


def _checkpoint(df: DataFrame) -> DataFrame:
    sc = df.sparkSession.sparkContext
    if sc.getCheckpointDir():
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


def connected_components(edges: DataFrame, a: str = "a", b: str = "b", max_rounds: int = 100) -> ComponentsResult:
    """Components of the undirected graph whose edges are the rows ``(a, b)`` of ``edges``.

    Raises ``RuntimeError`` if ``max_rounds`` rounds pass without convergence (the method
    needs O(log^2 n) rounds; 100 is far beyond any real graph)."""
    current = _checkpoint(_canonical(edges.select(F.col(a).alias("a"), F.col(b).alias("b"))))
    rounds = 0
    while True:
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")
        nxt = _checkpoint(small_star(large_star(current)))
        # The same edge set: equal counts and no edge of one missing from the other.
        changed = nxt.count() != current.count() or nxt.join(current, ["hi", "lo"], "left_anti").limit(1).count() > 0
        current = nxt
        if not changed:
            break
    # Converged: every edge is (node, root). Roots map to themselves.
    nodes = current.select(F.col("hi").alias("id"), F.col("lo").alias("cluster"))
    roots = current.select(F.col("lo").alias("id"), F.col("lo").alias("cluster")).distinct()
    return ComponentsResult(assignment=nodes.unionByName(roots), rounds=rounds)
