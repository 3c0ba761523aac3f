"""Disputes: an issue report that says a run's numbers or correctness are wrong, answered in public by a rerun.

A moderator who may both triage reports and ask for reruns escalates a report in one step (`escalate`); with the
verification policy on, a new report on a run the policy could rerun is escalated by the policy itself, within
its class's budget (`escalate_by_policy`). The report then names the controlled rerun that answers it: a new one,
or the one already waiting for that run, which several reports share.

The outcome follows from the rerun and is decided here alone (`outcome_of`): upheld when the rerun did not
reproduce the run, rejected when it did, undecided when it could not decide, failed without a verdict, or was
cancelled; the dispute is open while the rerun waits or runs. Every end of a rerun (and every verdict `reevaluate`
decides again) sends verification.reruns.rerun_ended inside the transaction that wrote it where there is one;
`close_disputes` closes the reports waiting on it there, with the outcome, the time the rerun ended, and the report
status that says it (OUTCOME_STATUS).

The public sees a dispute's category, dates, outcome, rerun and attestation, and the summary a moderator writes
for it (IssueReport.public_summary); never the report's text or its reporter's contact.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from attestations.models import DisputeOutcome, IssueReport
from attestations.services import report_filed
from runs.models import Run
from runs.selectors import run_hardware_class
from verification.models import RerunRequest, VerificationPause
from verification.policy import class_state, policy_on, registered_classes
from verification.reruns import RerunRefusedError, may_request_rerun, request_rerun, rerun_ended, system_user
from web.scopes import DISPUTE

logger = logging.getLogger(__name__)

# The reports a rerun can answer: the others (a duplicate, a license) are for moderators alone.
DISPUTABLE = (IssueReport.Category.WRONG_NUMBERS, IssueReport.Category.BROKEN_CORRECTNESS)
# The report's status once its dispute closed: the reporter was right, wrong, or no one could tell.
OUTCOME_STATUS = {
    DisputeOutcome.UPHELD: IssueReport.Status.RESOLVED,
    DisputeOutcome.REJECTED: IssueReport.Status.DISMISSED,
    DisputeOutcome.UNDECIDED: IssueReport.Status.RESOLVED,
}
# What each outcome means, as the pages and the feed say it after the outcome's name.
OUTCOME_MEANING = {
    DisputeOutcome.UPHELD: "the rerun did not reproduce the run",
    DisputeOutcome.REJECTED: "the rerun reproduced the run",
    DisputeOutcome.UNDECIDED: "the rerun could not decide, failed or was cancelled",
}
POLICY_REASON = "verification policy: a dispute"


class DisputeRefusedError(Exception):
    """A report that cannot become a dispute now; the message says why, for the moderator."""


def outcome_of(rerun: RerunRequest) -> DisputeOutcome | None:
    """The dispute's outcome as the rerun answering it decides it; None while the rerun waits or runs."""
    if rerun.is_active:
        return None
    if rerun.state != RerunRequest.State.CANCELLED:
        if rerun.verdict == Run.Evidence.NOT_REPRODUCED:
            return DisputeOutcome.UPHELD
        if rerun.verdict == Run.Evidence.REPRODUCED:
            return DisputeOutcome.REJECTED
    return DisputeOutcome.UNDECIDED


def may_escalate(user: PermissionsMixin | AnonymousUser) -> bool:
    """Escalating is a moderation decision on the report and a request for a rerun: it needs both permissions."""
    return user.has_perm("attestations.change_issuereport") and may_request_rerun(user)


def escalate(report: IssueReport, user: AbstractBaseUser | AnonymousUser) -> RerunRequest:
    """A moderator turns the report into a dispute: the rerun that answers it, asked for now or already waiting."""
    if not isinstance(user, PermissionsMixin) or not may_escalate(user):
        raise DisputeRefusedError("escalating needs the permissions to change issue reports and to request reruns")
    return _escalate(report, user, f"dispute: issue report #{report.pk} ({report.get_category_display()})")


def escalate_by_policy(report_id: int) -> RerunRequest | None:
    """The verification policy escalates a new report itself, as the system account, when the run could be rerun
    and its hardware class has budget left (or a rerun of the run already waits: sharing it costs nothing).
    Otherwise the report waits for a moderator, as it would with the policy off."""
    report = IssueReport.objects.select_related("run").filter(pk=report_id).first()
    if report is None or not policy_on() or report.category not in DISPUTABLE or report.is_dispute:
        return None
    if not RerunRequest.objects.active().filter(run=report.run).exists() and not _budget_left(report.run):
        return None
    try:
        return _escalate(report, system_user(), POLICY_REASON)
    except DisputeRefusedError as refused:
        logger.info("report #%s left for the moderators: %s", report.pk, refused)
        return None


def _budget_left(run: Run) -> bool:
    name = run_hardware_class(run)
    pauses = {pause.hardware_class: pause for pause in VerificationPause.objects.filter(hardware_class=name)}
    return class_state(name, timezone.now(), registered_classes(), pauses).may_queue


def _escalate(report: IssueReport, user: AbstractBaseUser, reason: str) -> RerunRequest:
    if report.category not in DISPUTABLE:
        raise DisputeRefusedError("only a report of wrong numbers or broken correctness can be answered by a rerun")
    with transaction.atomic():
        locked = IssueReport.objects.select_for_update().select_related("run").get(pk=report.pk)
        if locked.dispute_is_open:
            raise DisputeRefusedError(f"it is already a dispute, waiting on rerun #{locked.rerun_id}")
        rerun = _answering_rerun(locked.run, user, reason)
        now = timezone.now()
        IssueReport.objects.filter(pk=locked.pk).update(
            rerun=rerun,
            escalated_at=now,
            dispute_outcome="",
            dispute_closed_at=None,
            status=IssueReport.Status.TRIAGED,
            moderated_at=now,
            moderated_by=user,
        )
        _log(locked, user, f"Escalated to a dispute, answered by rerun #{rerun.pk}.")
        DISPUTE.retire_on_commit(locked.run)
    report.refresh_from_db()
    return rerun


def _answering_rerun(run: Run, user: AbstractBaseUser, reason: str) -> RerunRequest:
    """The run's rerun already waiting (locked, so it cannot end before this dispute is linked to it), or a new one."""
    if run.withdrawn_at is not None:
        raise DisputeRefusedError("this run is withdrawn")
    waiting = RerunRequest.objects.select_for_update().active().filter(run=run).first()
    if waiting is not None:
        return waiting
    try:
        return request_rerun(run, user=user, reason=reason)
    except RerunRefusedError as refused:
        raise DisputeRefusedError(str(refused)) from None


@receiver(report_filed, dispatch_uid="verification.disputes.escalate_filed_report")
def escalate_filed_report(sender: type[IssueReport], report_id: int, **kwargs: Any) -> None:
    """With the verification policy on, a new report of wrong numbers or correctness may become a dispute at once."""
    escalate_by_policy(report_id)


@receiver(rerun_ended, dispatch_uid="verification.disputes.close_disputes")
def close_disputes(sender: type[RerunRequest], request: RerunRequest, **kwargs: Any) -> None:
    """The rerun ended, or its verdict was decided again (reevaluate): each dispute it answers closes with its
    outcome, at the time the rerun ended, or takes the outcome the rerun now gives."""
    rerun = RerunRequest.objects.select_related("run").get(pk=request.pk)
    outcome = outcome_of(rerun)
    if outcome is None:
        return
    with transaction.atomic():
        answered = IssueReport.objects.disputes().filter(rerun=rerun).exclude(dispute_outcome=outcome)
        changing = list(answered.select_for_update())
        if not changing:
            return
        IssueReport.objects.filter(pk__in=[report.pk for report in changing]).update(
            dispute_outcome=outcome,
            dispute_closed_at=rerun.finished_at or timezone.now(),
            status=OUTCOME_STATUS[outcome],
            moderated_at=timezone.now(),
            moderated_by=system_user(),
        )
        for report in changing:
            said = "Dispute closed" if report.dispute_is_open else "Dispute decided again"
            _log(report, None, f"{said}: {outcome.label} ({OUTCOME_MEANING[outcome]}; rerun #{rerun.pk}).")
        DISPUTE.retire_on_commit(rerun.run)


def _log(report: IssueReport, user: AbstractBaseUser | None, message: str) -> None:
    """One line in the report's admin history; the system account's where no person acted."""
    actor = user or system_user()
    LogEntry.objects.log_actions(
        user_id=actor.pk, queryset=[report], action_flag=CHANGE, change_message=message, single_object=True
    )


def outcome_words(report: IssueReport) -> str:
    """'upheld: the rerun did not reproduce the run'; 'open: rerun #12 is queued' while it waits."""
    if report.dispute_outcome:
        outcome = DisputeOutcome(report.dispute_outcome)
        return f"{outcome.label}: {OUTCOME_MEANING[outcome]}"
    state = report.rerun.state if report.rerun is not None else "gone"
    return f"open: rerun #{report.rerun_id} is {state}"
