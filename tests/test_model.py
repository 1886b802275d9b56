"""The job transition table (SPEC §1): the model's rule and the real store agree on every (from, to) pair."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcastle.clock import utc_now
from memcastle.errors import Conflict, IllegalTransition
from memcastle.model import Job, JobStatus, NewJob, is_legal_transition
from memcastle.store.sqlite import SQLiteStore

Q, R, P, C, F, X = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.PAUSED, JobStatus.COMPLETED,
                    JobStatus.FAILED, JobStatus.CANCELLED)

# Written out from SPEC §1, independently of `memcastle.model.JOB_TRANSITIONS`.
SPEC_TABLE = {
    (Q, R),  # claim
    (R, P),  # pause
    (P, Q),  # resume
    (R, C), (R, F),  # finish
    (Q, X), (P, X), (R, X),  # cancel
    (R, Q),  # crash recovery / shutdown, within budget
    (F, Q),  # retry
}
ALL_PAIRS = list(itertools.product(JobStatus, repeat=2))

# A legal path from a fresh (queued) job to each status.
PATH_TO = {
    Q: [],
    R: [R],
    P: [R, P],
    C: [R, C],
    F: [R, F],
    X: [X],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path_factory.mktemp("model") / "palace")
    yield opened
    opened.close()


def job_in(store: SQLiteStore, status: JobStatus) -> Job:
    job, _ = store.create_job(NewJob(kind="probe"))
    for step in PATH_TO[status]:
        job = store.transition_job(job.id, step)
    assert job.status is status
    return job


@pytest.mark.parametrize(("current", "target"), ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS])
def test_model_allows_exactly_the_spec_transitions(current: JobStatus, target: JobStatus) -> None:
    assert is_legal_transition(current, target) is ((current, target) in SPEC_TABLE)


def test_no_status_may_transition_to_itself() -> None:
    assert not any(is_legal_transition(status, status) for status in JobStatus)


def test_finished_statuses_are_terminal_except_retry_of_failed() -> None:
    exits = {(a, b) for a, b in ALL_PAIRS if a in (C, X, F) and is_legal_transition(a, b)}
    assert exits == {(F, Q)}


@pytest.mark.parametrize(("current", "target"), ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS])
def test_store_enforces_the_transition_table(store: SQLiteStore, current: JobStatus, target: JobStatus) -> None:
    job = job_in(store, current)
    if (current, target) in SPEC_TABLE:
        moved = store.transition_job(job.id, target)
        assert moved.status is target
        assert store.get_job(job.id).status is target
    else:
        with pytest.raises(IllegalTransition) as refused:
            store.transition_job(job.id, target, error="should not be written")
        assert refused.value.current == current.value
        assert refused.value.target == target.value
        assert current.value in refused.value.message and target.value in refused.value.message
        after = store.get_job(job.id)
        assert after.status is current, "a refused transition must not change the job"
        assert after.error is None, "a refused transition must not write its fields"


def test_illegal_transition_is_a_conflict_naming_the_job(store: SQLiteStore) -> None:
    job = job_in(store, C)
    with pytest.raises(Conflict) as refused:
        store.transition_job(job.id, R)
    assert isinstance(refused.value, IllegalTransition)
    assert refused.value.existing_id == job.id
    assert job.id in refused.value.message


def test_transition_fenced_by_owner_is_refused_for_another_owner(store: SQLiteStore) -> None:
    job, _ = store.create_job(NewJob(kind="fenced"))
    claimed = store.claim_next_job("worker-a", 30, ["fenced"])
    assert claimed is not None and claimed.id == job.id
    with pytest.raises(Conflict):
        store.transition_job(job.id, C, owner="worker-b", finished_at=utc_now())
    assert store.get_job(job.id).status is R
    assert store.transition_job(job.id, C, owner="worker-a").status is C


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(targets=st.lists(st.sampled_from(list(JobStatus)), min_size=1, max_size=12))
def test_any_sequence_of_requests_follows_the_table(store: SQLiteStore, targets: list[JobStatus]) -> None:
    """Drive one job through random requests: the store moves exactly when the table says so."""
    job, _ = store.create_job(NewJob(kind="walk"))
    status = Q
    for target in targets:
        if (status, target) in SPEC_TABLE:
            assert store.transition_job(job.id, target).status is target
            status = target
        else:
            with pytest.raises(IllegalTransition):
                store.transition_job(job.id, target)
        assert store.get_job(job.id).status is status


def test_job_status_values_are_the_spec_names() -> None:
    assert {s.value for s in JobStatus} == {"queued", "running", "paused", "completed", "failed", "cancelled"}

