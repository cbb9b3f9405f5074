// A minimal Server-Sent Events client: one connection, `data:` lines joined per event, arrival time per chunk.
import http from 'node:http';

/**
 * Connects to `url`; calls onData(dataText, arrivedAtMs) for every event with data.
 * Resolves with { status, close } once the response head arrived (status !== 200: not streaming).
 */
export function openSse(url, headers, onData) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false });
    req.setNoDelay?.(true);
    const close = () => req.destroy();
    req.once('error', (error) => reject(error));
    req.once('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve({ status: res.statusCode, close });
        return;
      }
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk) => {
        const arrived = performance.now();
        buffer += chunk.replace(/\r\n/g, '\n');
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let data;
          for (const line of block.split('\n')) {
            if (!line.startsWith('data:')) continue;
            const value = line.slice(line[5] === ' ' ? 6 : 5);
            data = data === undefined ? value : `${data}\n${value}`;
          }
          if (data !== undefined) onData(data, arrived);
        }
      });
      res.on('error', () => {});
      req.removeAllListeners('error');
      req.on('error', () => {});
      resolve({ status: 200, close });
    });
  });
}
