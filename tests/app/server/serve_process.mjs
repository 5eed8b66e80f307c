// Starting and stopping `kvforge serve` for the node tests of issue 26
// (ux.test.mjs, page.test.mjs): KVFORGE_BIN and KVFORGE_MODEL from the environment.
import { spawn } from 'node:child_process';

// Starts `kvforge serve` on `model` with `args` on a free port; resolves to { proc, port, log() }.
// KVFORGE_SERVER_LAUNCHER (a JSON array, e.g. mpirun and its flags) runs the server under it.
export async function startServer(args, model = process.env.KVFORGE_MODEL) {
  const launcher = JSON.parse(process.env.KVFORGE_SERVER_LAUNCHER || '[]');
  const command = [...launcher, process.env.KVFORGE_BIN,
                   'serve', '-m', model, '--port', '0', ...args];
  const proc = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + log)), 60000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[\d.]+:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}):\n` + log));
    });
  });
  return { proc, port, log: () => log };
}

export async function stopServer(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  proc.kill('SIGTERM');
  await exited;
}
