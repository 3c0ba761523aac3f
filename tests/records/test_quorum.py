"""The quorum for the top (records/quorum.py): how agreeing and disagreeing reruns of a version decide it."""

from __future__ import annotations

from records.quorum import DISAGREEMENT, MET, NONE, NOT_REPRODUCED, PENDING, REPORTED, REPRODUCED, Vote, decide


def vote(key: str, level: str = REPRODUCED, *, host: str = "", order: int = 0) -> Vote:
    return Vote(key, host, level, order)


def test_no_rerun_decides_nothing() -> None:
    decided = decide([], 2)
    assert (decided.state, decided.level, decided.sentence()) == (NONE, REPORTED, "")
    assert not decided.needs_another


def test_one_rerun_reproduces_by_one_of_two_and_asks_for_another() -> None:
    decided = decide([vote("a")], 2)
    assert (decided.state, decided.level) == (PENDING, REPRODUCED)
    assert decided.sentence() == "reproduced by 1 of 2 workers"
    assert decided.needs_another and decided.counted_keys == ("a",)


def test_two_keys_agreeing_meet_the_quorum() -> None:
    decided = decide([vote("a", order=1), vote("b", order=2)], 2)
    assert (decided.state, decided.level) == (MET, REPRODUCED)
    assert decided.sentence() == "reproduced by 2 workers"
    assert not decided.needs_another


def test_the_same_key_twice_is_one_worker() -> None:
    decided = decide([vote("a", order=1), vote("a", order=2)], 2)
    assert decided.sentence() == "reproduced by 1 of 2 workers"
    assert decided.votes == 2 and decided.needs_another


def test_a_keys_latest_vote_is_its_word() -> None:
    decided = decide([vote("a", order=1), vote("a", NOT_REPRODUCED, order=2)], 2)
    assert (decided.level, decided.reproduced, decided.not_reproduced) == (NOT_REPRODUCED, 0, 1)


def test_one_against_one_is_a_disagreement_back_to_reported_until_a_third_decides() -> None:
    split = [vote("a", order=1), vote("b", NOT_REPRODUCED, order=2)]
    decided = decide(split, 2)
    assert (decided.state, decided.level) == (DISAGREEMENT, REPORTED)
    assert decided.needs_another and decided.counted_keys == ("a", "b")
    assert "another worker's rerun decides" in decided.sentence()

    for third, level in ((REPRODUCED, REPRODUCED), (NOT_REPRODUCED, NOT_REPRODUCED)):
        settled = decide([*split, vote("c", third, order=3)], 2)
        assert (settled.state, settled.level) == (MET, level)


def test_a_disagreement_reproduced_by_two_says_so() -> None:
    decided = decide([vote("a"), vote("b", NOT_REPRODUCED), vote("c")], 2)
    assert decided.sentence() == "reproduced by 2 workers"


def test_one_not_reproduced_takes_a_run_down_at_once() -> None:
    decided = decide([vote("a", NOT_REPRODUCED)], 2)
    assert (decided.state, decided.level, decided.sentence()) == (MET, NOT_REPRODUCED, "not reproduced by 1 worker")
    assert not decided.needs_another


def test_distinct_hosts_count_two_keys_on_one_host_once() -> None:
    same_host = [vote("a", host="h1"), vote("b", host="h1")]
    assert decide(same_host, 2).sentence() == "reproduced by 2 workers"
    decided = decide(same_host, 2, distinct_hosts=True)
    assert decided.sentence() == "reproduced by 1 of 2 workers" and decided.needs_another
    apart = [vote("a", host="h1"), vote("b", host="h2")]
    assert decide(apart, 2, distinct_hosts=True).sentence() == "reproduced by 2 workers"


def test_distinct_hosts_takes_votes_naming_no_host_for_one_host() -> None:
    unnamed = [vote("a", host=""), vote("b", host="")]
    assert decide(unnamed, 2, distinct_hosts=True).sentence() == "reproduced by 1 of 2 workers"


def test_a_quorum_of_three() -> None:
    assert decide([vote("a"), vote("b")], 3).sentence() == "reproduced by 2 of 3 workers"
    assert decide([vote("a"), vote("b"), vote("c")], 3).sentence() == "reproduced by 3 workers"
    two_to_one = decide([vote("a"), vote("b"), vote("c", NOT_REPRODUCED)], 3)
    assert (two_to_one.state, two_to_one.level) == (DISAGREEMENT, REPORTED)
