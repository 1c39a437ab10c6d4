"""Large-star / small-star connected components equal a union-find over the same edges."""

import random

import pytest

pytest.importorskip("pyspark")

from sketchdb.spark import connected_components, local_session  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    return local_session()


def union_find(edges):
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in list(parent)}


def components(spark, edges, dtype="long"):
    df = spark.createDataFrame(edges, f"a {dtype}, b {dtype}")
    res = connected_components(df)
    got = {r["id"]: r["cluster"] for r in res.assignment.collect()}
    return got, res.rounds


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_graphs_equal_union_find(spark, seed):
    rng = random.Random(seed)
    n = rng.choice([50, 300, 1000])
    m = rng.randint(n // 3, n)
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(m)]
    want = union_find((a, b) for a, b in edges if a != b)
    got, _ = components(spark, edges)
    assert got == want
    assert len(set(got.values())) > 1


def test_string_ids(spark):
    rng = random.Random(9)
    edges = [(f"d{rng.randrange(400):04d}", f"d{rng.randrange(400):04d}") for _ in range(300)]
    got, _ = components(spark, edges, "string")
    assert got == union_find((a, b) for a, b in edges if a != b)


def test_long_chain(spark):
    # A path over 2,000 nodes in a random order: the worst case for pointer jumping.
    rng = random.Random(5)
    nodes = list(range(2000))
    rng.shuffle(nodes)
    edges = list(zip(nodes, nodes[1:]))
    got, rounds = components(spark, edges)
    assert got == {x: 0 for x in nodes}
    assert rounds > 1


def test_star_of_10k(spark):
    # The centre is not the smallest id, so every node must be re-pointed.
    centre = 5000
    edges = [(centre, x) for x in range(10_000) if x != centre]
    got, _ = components(spark, edges)
    assert got == {x: 0 for x in range(10_000)}


def test_two_stars_and_pairs(spark):
    edges = [(10, 11), (11, 12), (20, 21), (30, 31), (31, 30), (40, 40)]
    got, _ = components(spark, edges)
    assert got == {10: 10, 11: 10, 12: 10, 20: 20, 21: 20, 30: 30, 31: 30}
