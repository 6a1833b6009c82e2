// VS Code client for the lossproof language server (`lossproof lsp`, stdio).
// Highlighting comes from syntaxes/lossproof.tmLanguage.json and works without
// the server; diagnostics, hovers, etc. need `lossproof` on PATH (or the
// `lossproof.server.path` setting).
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

/** @type {LanguageClient | undefined} */
let client;

function serverOptions() {
  const config = vscode.workspace.getConfiguration('lossproof');
  const command = config.get('server.path') || 'lossproof';
  const args = ['lsp', ...config.get('server.extraArgs', [])];
  return { command, args, transport: TransportKind.stdio };
}

async function startClient() {
  const server = serverOptions();
  client = new LanguageClient(
    'lossproof',
    'lossproof language server',
    server,
    {
      documentSelector: [
        { scheme: 'file', language: 'lossproof' },
        { scheme: 'untitled', language: 'lossproof' },
      ],
      synchronize: {
        fileEvents: vscode.workspace.createFileSystemWatcher('**/*.lp'),
      },
    },
  );
  try {
    await client.start();
  } catch (err) {
    const message = err && err.message ? err.message : String(err);
    client = undefined;
    vscode.window.showWarningMessage(
      `lossproof: could not start \`${server.command} lsp\` (${message}). ` +
        'Highlighting still works; put lossproof on PATH or set "lossproof.server.path" for diagnostics.',
    );
  }
}

async function stopClient() {
  if (!client) return;
  const running = client;
  client = undefined;
  await running.stop();
}

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('lossproof.restartServer', async () => {
      await stopClient();
      await startClient();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('lossproof.server')) {
        await stopClient();
        await startClient();
      }
    }),
  );
  await startClient();
}

function deactivate() {
  return stopClient();
}

module.exports = { activate, deactivate };
