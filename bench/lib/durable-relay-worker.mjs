// The durable relay's child process: "runs" each queued request by parsing its body and sending it back as the event.
process.on('message', ({ queueId, body }) => process.send({ queueId, emitted: JSON.parse(body) }));
process.on('disconnect', () => process.exit(0));
