// Checks that the extension starts `lossproof lsp` over stdio, without VS Code:
// the `vscode` and `vscode-languageclient/node` modules are replaced by fakes.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const Module = require('node:module');
const path = require('node:path');

const started = [];
const warnings = [];
let settings = {};
let failStart = false;

const fakeVscode = {
  workspace: {
    getConfiguration: () => ({ get: (key, fallback) => (key in settings ? settings[key] : fallback) }),
    createFileSystemWatcher: (glob) => ({ glob }),
    onDidChangeConfiguration: () => ({ dispose() {} }),
  },
  commands: { registerCommand: (name) => ({ name, dispose() {} }) },
  window: { showWarningMessage: (message) => warnings.push(message) },
};

class FakeLanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    Object.assign(this, { id, name, serverOptions, clientOptions });
  }
  async start() {
    if (failStart) throw new Error('spawn lossproof ENOENT');
    started.push(this);
  }
  async stop() {}
}

const fakes = {
  vscode: fakeVscode,
  'vscode-languageclient/node': { LanguageClient: FakeLanguageClient, TransportKind: { stdio: 0 } },
};
const originalLoad = Module._load;
Module._load = function load(request, parent, isMain) {
  if (request in fakes) return fakes[request];
  return originalLoad.call(this, request, parent, isMain);
};

const extension = require(path.join(__dirname, '..', 'extension.js'));
const manifest = require(path.join(__dirname, '..', 'package.json'));

test('package.json contributes the lossproof language for .lp files', () => {
  const [language] = manifest.contributes.languages;
  assert.strictEqual(language.id, 'lossproof');
  assert.deepStrictEqual(language.extensions, ['.lp']);
  const [grammar] = manifest.contributes.grammars;
  assert.strictEqual(grammar.scopeName, 'source.lossproof');
  assert.strictEqual(grammar.embeddedLanguages['meta.embedded.block.sql'], 'sql');
  assert.ok(manifest.dependencies['vscode-languageclient']);
});

test('activate starts `lossproof lsp` over stdio for lossproof documents', async () => {
  settings = {};
  const context = { subscriptions: [] };
  await extension.activate(context);
  assert.strictEqual(started.length, 1);
  const client = started[0];
  assert.deepStrictEqual(client.serverOptions, { command: 'lossproof', args: ['lsp'], transport: 0 });
  assert.deepStrictEqual(
    client.clientOptions.documentSelector.map((s) => s.language),
    ['lossproof', 'lossproof'],
  );
  assert.ok(context.subscriptions.some((s) => s.name === 'lossproof.restartServer'));
  await extension.deactivate();
});

test('server path and extra arguments come from the settings', async () => {
  settings = { 'server.path': '/opt/lossproof/bin/lossproof', 'server.extraArgs': ['--log', 'debug'] };
  await extension.activate({ subscriptions: [] });
  assert.deepStrictEqual(started.at(-1).serverOptions, {
    command: '/opt/lossproof/bin/lossproof',
    args: ['lsp', '--log', 'debug'],
    transport: 0,
  });
  await extension.deactivate();
});

test('a missing lossproof binary is a warning, not a crash', async () => {
  settings = {};
  failStart = true;
  await extension.activate({ subscriptions: [] });
  failStart = false;
  assert.strictEqual(warnings.length, 1);
  assert.match(warnings[0], /lossproof lsp/);
  await extension.deactivate();
});
