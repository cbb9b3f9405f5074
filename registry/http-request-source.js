// Emits every HTTP request sent to the source's endpoint; answers the caller with 200 {"success":true}.
module.exports = {
  key: 'http-new-requests',
  name: 'New Requests',
  description: "Emit an event for every HTTP request sent to this source's endpoint URL.",
  version: '0.1.0',
  props: {
    http: {
      type: '$.interface.http',
      customResponse: false,
    },
  },
  async run(event) {
    this.$emit(event, {
      summary: `${event.method} ${event.path}`,
    });
  },
};
