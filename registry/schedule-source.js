// Emits an event on a fixed interval or a cron schedule.
module.exports = {
  key: 'schedule-custom-interval',
  name: 'Custom Interval',
  description: 'Emit an event on an interval or a cron schedule you choose.',
  version: '0.1.0',
  props: {
    timer: {
      type: '$.interface.timer',
      default: {
        intervalSeconds: 900,
      },
    },
  },
  async run(event) {
    this.$emit(event, {
      id: event.timestamp,
      summary: `Tick at ${new Date(event.timestamp * 1000).toISOString()}`,
      ts: event.timestamp * 1000,
    });
  },
};
