// What a node does when the other nodes of a cluster signal: wake its loops for queued work, drop cached rows that changed.
import type { ClusterSignals } from '../delivery/cluster-signals.js';
import type { OutboxSender } from '../delivery/sends/sender.js';
import type { WebhookSender } from '../delivery/webhooks/sender.js';
import type { Dispatcher } from '../engine/dispatcher.js';
import type { TimerScheduler } from '../engine/timers.js';
import type { WorkflowRunner } from '../engine/workflow-runner.js';
import type { IngressService } from '../services/ingress.js';
import type { LiveStreams } from '../services/live.js';
import type { WorkflowRunService } from '../services/workflow-runs.js';

/** What a node does when another node signals: wake for queued work, forget cached rows that changed. */
export function listenToCluster(
  signals: ClusterSignals,
  parts: {
    dispatcher: Dispatcher;
    workflowRunner: WorkflowRunner;
    timers: TimerScheduler;
    webhookSender: WebhookSender;
    outbox: OutboxSender;
    ingress: IngressService;
    live: LiveStreams;
    workflowRuns: WorkflowRunService;
  },
): void {
  const { dispatcher, workflowRunner, timers, webhookSender, outbox, ingress, live, workflowRuns } = parts;
  // Streams of a source or workflow deleted on another node end here too (the check never rejects).
  const endStreamsOfDeleted = (kind: 'sources' | 'workflows', ids: string[] | undefined) => void live.endStreamsOfDeleted(kind, ids);
  signals.on('invocations', (ids) => dispatcher.wake(ids));
  // A custom-response run answered on another node: the request waiting here gets it.
  // After its answer connection was lost, the node reads again the answers of the requests still waiting.
  signals.onAnswer(
    (id, answer) =>
      id.startsWith('wr_') ? workflowRunner.answerRelayed(id, answer.response, answer.error) : dispatcher.answerRelayed(id, answer.response, answer.error),
    () => [...dispatcher.responders.waitingIds(), ...workflowRunner.waitingAnswers()],
  );
  signals.on('workflow_runs', (ids) => workflowRunner.wake(ids));
  signals.on('deliveries', () => webhookSender.wake());
  // A webhook deleted or retired on another node: what this one holds of its deliveries is not sent.
  signals.on('webhooks', (ids) => webhookSender.retire(ids));
  signals.on('sends', () => outbox.wake());
  signals.on('timers', () => timers.poke());
  // A key replaced on another node (or by the CLI): streams here opened with the old key end.
  signals.on('accounts', (ids) => void live.endStreamsOfOldKeys(ids));
  signals.on('sources', (ids) => {
    if (ids === undefined) {
      dispatcher.evictAll();
      ingress.evictAll();
    } else {
      for (const id of ids) {
        dispatcher.evict(id);
        ingress.evictSource(id);
      }
    }
    // A source's timer rows may have changed with it.
    timers.poke();
    endStreamsOfDeleted('sources', ids);
  });
  signals.on('workflows', (ids) => {
    if (ids === undefined) {
      workflowRunner.evictAllWorkflows();
      ingress.evictAll();
    } else {
      for (const id of ids) {
        workflowRunner.evictWorkflow(id);
        ingress.evictSource(id);
      }
    }
    timers.poke();
    endStreamsOfDeleted('workflows', ids);
    // HTTP clients here waiting on a run of a workflow deleted there, or that stopped answering with $.respond() there,
    // get their 504 now (the check never rejects).
    void workflowRuns.endWaitsOfChanged(ids);
  });
}
