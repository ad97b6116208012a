import assert from 'node:assert/strict';
import { Given, Then, When } from '@cucumber/cucumber';
import { AuditEntry, AuditTrail, EVENT_INFO, type GuardrailEventType } from '../../src/index.js';
import { need, type GuardrailsWorld } from '../support/world.js';

const trail = (w: GuardrailsWorld) => need(w.trail, 'audit trail');
const entry = (w: GuardrailsWorld) => need(w.entry, 'audit entry');

function entryOf(world: GuardrailsWorld, eventType: string): AuditEntry {
  const info = EVENT_INFO[eventType as GuardrailEventType];
  assert.ok(info, `unknown event type ${eventType}`);
  return AuditEntry.create({
    eventType: eventType as GuardrailEventType,
    guardName: info.guardName,
    timestamp: world.clock.now(),
  });
}

Given('an empty audit trail', function (this: GuardrailsWorld) {
  this.trail = new AuditTrail();
});

Given('an audit trail with max_entries {int}', function (this: GuardrailsWorld, maxEntries: number) {
  this.trail = new AuditTrail({ maxEntries });
});

When('I add a {word} entry to the audit trail', function (this: GuardrailsWorld, eventType: string) {
  trail(this).add(entryOf(this, eventType));
});

When(
  'I add {int} {word} entries to the audit trail',
  function (this: GuardrailsWorld, n: number, eventType: string) {
    for (let i = 0; i < n; i++) trail(this).add(entryOf(this, eventType));
  },
);

Then('the audit trail should have {int} entries', function (this: GuardrailsWorld, n: number) {
  assert.equal(trail(this).size, n);
  assert.equal(trail(this).entries.length, n);
});

Then('the audit trail allowed_count should be {int}', function (this: GuardrailsWorld, n: number) {
  assert.equal(trail(this).allowedCount, n);
});

Then('the audit trail denied_count should be {int}', function (this: GuardrailsWorld, n: number) {
  assert.equal(trail(this).deniedCount, n);
});

When(
  'I create an audit entry with event_type {word} and guard_name {word}',
  function (this: GuardrailsWorld, eventType: string, guardName: string) {
    this.entry = AuditEntry.create({
      eventType: eventType as GuardrailEventType,
      guardName: guardName as AuditEntry['guardName'],
    });
  },
);

Then('the audit entry event_type should be {string}', function (this: GuardrailsWorld, value: string) {
  assert.equal(entry(this).eventType, value);
});

Then('the audit entry guard_name should be {string}', function (this: GuardrailsWorld, value: string) {
  assert.equal(entry(this).guardName, value);
});

Then('the audit entry result should be {string}', function (this: GuardrailsWorld, value: string) {
  assert.equal(entry(this).result, value);
});

Then('the audit entry should have a timestamp', function (this: GuardrailsWorld) {
  const ts = entry(this).timestamp;
  assert.ok(Number.isFinite(ts) && ts > 0, `timestamp ${ts}`);
  assert.match(entry(this).toJSON().timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
});
