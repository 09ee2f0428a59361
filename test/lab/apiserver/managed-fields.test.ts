/**
 * The pure core of the lab API server's server-side apply (lab/src/apiserver/field-set.ts,
 * structured-merge.ts, managed-fields.ts) against what structured-merge-diff and kube-apiserver's
 * field manager do: FieldsV1 as kube writes it, list-map and set items by their path elements, the
 * merge of an applied configuration, ownership by update and by apply, conflicts worded as
 * internal/conflict.go words them. Properties: an apply repeated changes nothing; a field an applier
 * stops applying goes unless another manager owns it.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describePath, fieldSetOf, fromFieldsV1, paths, toFieldsV1 } from '../../../lab/src/apiserver/field-set';
import type { KubeObject } from '../../../lab/src/apiserver/kube-object';
import {
  type ManagedFieldsEntry,
  decodeManagedFields,
  encodeManagedFields,
  managersBeforeUpdate,
  recordApply,
  recordUpdate,
} from '../../../lab/src/apiserver/managed-fields';
import { builtInMergeSchema, customResourceMergeSchema } from '../../../lab/src/apiserver/merge-schema';
import { ApiError } from '../../../lab/src/apiserver/status';
import { StructureError, compare, merge, toFieldSet } from '../../../lab/src/apiserver/structured-merge';

const deployments = builtInMergeSchema('Deployment');
const configMaps = builtInMergeSchema('ConfigMap');
const everything = (set: ReturnType<typeof fieldSetOf>) => set;
const now = '2026-01-01T00:00:00Z';
const later = '2026-01-01T00:01:00Z';

const configMap = (data: Record<string, string>, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: 'default', ...(labels ? { labels } : {}) },
  data,
});

const writer = (manager: string) => ({ manager, apiVersion: 'v1', subresource: '' });

const apply = (live: KubeObject, config: KubeObject, managers: ManagedFieldsEntry[], manager: string, force = false, at = now) =>
  recordApply(live, config, managers, writer(manager), force, everything, configMaps, at);

const owned = (managers: ManagedFieldsEntry[], manager: string) =>
  paths(managers.find((m) => m.manager === manager)?.fields ?? fieldSetOf([])).map(describePath);

describe('lab API server: field sets and server-side apply (pure)', () => {
  it('writes FieldsV1 as kube-apiserver stores it: `.` for an item with fields below, keys sorted, and reads it back', () => {
    // fieldpath/serialize.go: a member with children carries ".", a leaf is {}; k: keys are JSON with sorted names.
    const set = toFieldSet(
      {
        spec: {
          template: { spec: { containers: [{ name: 'a', image: 'x', ports: [{ protocol: 'UDP', containerPort: 53 }] }] } },
        },
        metadata: { finalizers: ['f1'] },
      },
      deployments,
    );
    const fieldsV1 = {
      'f:metadata': { 'f:finalizers': { 'v:"f1"': {} } },
      'f:spec': {
        'f:template': {
          'f:spec': {
            'f:containers': {
              'k:{"name":"a"}': {
                '.': {},
                'f:image': {},
                'f:name': {},
                'f:ports': { 'k:{"containerPort":53,"protocol":"UDP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } },
              },
            },
          },
        },
      },
    };
    assert.deepEqual(toFieldsV1(set), fieldsV1);
    assert.deepEqual(toFieldsV1(fromFieldsV1(fieldsV1) as ReturnType<typeof fieldSetOf>), fieldsV1);
    // fieldpath/path.go String: what a conflict names.
    assert.deepEqual(paths(set).map(describePath).slice(0, 2), ['.metadata.finalizers[="f1"]', '.spec.template.spec.containers[name="a"]']);
  });

  it('keys a container port without a protocol by its default, TCP, and refuses a list-map item without a key', () => {
    // k8s.io/api core/v1 ContainerPort: protocol defaults to TCP (+default="TCP"), so it keys an item that omits it.
    const set = toFieldSet({ spec: { template: { spec: { containers: [{ name: 'a', ports: [{ containerPort: 80 }] }] } } } }, deployments);
    assert.ok(paths(set).map(describePath).includes('.spec.template.spec.containers[name="a"].ports[containerPort=80,protocol="TCP"]'));
    // typed/helpers.go keyedAssociativeListItemToPathElement.
    assert.throws(
      () => toFieldSet({ spec: { template: { spec: { containers: [{ image: 'x' }] } } } }, deployments),
      new StructureError(
        '.spec.template.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn\'t have default value)',
      ),
    );
    assert.throws(
      () => toFieldSet({ spec: { template: { spec: { containers: [{ name: 'a' }, { name: 'a' }] } } } }, deployments),
      /duplicate entries for key \[{"name":"a"}\]|duplicate entries/,
    );
  });

  it("merges list-map items by key in the applied list's order, keeping live-only items, and replaces atomic lists", () => {
    // typed/merge.go visitListItems; a CRD's x-kubernetes-list-type decides (atomic unless said).
    const schema = customResourceMergeSchema({
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            peers: {
              type: 'array',
              'x-kubernetes-list-type': 'map',
              'x-kubernetes-list-map-keys': ['name'],
              items: { type: 'object', properties: { name: { type: 'string' }, port: { type: 'integer' } } },
            },
            tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
            cidrs: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    });
    const live = {
      spec: {
        peers: [
          { name: 'a', port: 1 },
          { name: 'b', port: 2 },
          { name: 'c', port: 3 },
        ],
        tags: ['x'],
        cidrs: ['1', '2'],
      },
    };
    const applied = { spec: { peers: [{ name: 'c', port: 30 }, { name: 'a' }, { name: 'd', port: 4 }], tags: ['y'], cidrs: ['3'] } };
    assert.deepEqual(merge(live, applied, schema), {
      spec: {
        peers: [
          { name: 'b', port: 2 },
          { name: 'c', port: 30 },
          { name: 'a', port: 1 },
          { name: 'd', port: 4 },
        ],
        tags: ['x', 'y'],
        cidrs: ['3'],
      },
    });
  });

  it('gives an updater what it added or changed, with `.` for a map it added, and takes it from the other managers (merge/update.go Update)', () => {
    const before = configMap({ a: '1' });
    const managers = apply(configMap({}), configMap({ a: '1' }), [], 'kubectl').managers;
    const after = recordUpdate(
      before,
      configMap({ a: '2', b: '3' }, { app: 'x' }),
      managers,
      writer('editor'),
      everything,
      configMaps,
      later,
    );
    assert.deepEqual(owned(after, 'editor'), ['.data.a', '.data.b', '.metadata.labels', '.metadata.labels.app']);
    assert.deepEqual(owned(after, 'kubectl'), []);
    assert.equal(after.find((m) => m.manager === 'editor')?.time, later);
    // An update that changes nothing changes no entry, nor its time (managedfieldsupdater.go).
    assert.deepEqual(recordUpdate(before, before, managers, writer('editor'), everything, configMaps, later), managers);
    // A field removed leaves every manager.
    assert.deepEqual(recordUpdate(before, configMap({}), managers, writer('editor'), everything, configMaps, later), []);
  });

  it('answers a changed field another manager owns with a 409 naming field and manager, as internal/conflict.go', () => {
    const live = apply(configMap({}), configMap({ a: '1' }), [], 'kubectl');
    const updated = recordUpdate(
      live.object,
      configMap({ a: '2', b: '2' }),
      live.managers,
      writer('kubectl-edit'),
      everything,
      configMaps,
      later,
    );
    const refusal = (() => {
      try {
        apply(configMap({ a: '2', b: '2' }), configMap({ a: '1', b: '1' }), updated, 'helm');
      } catch (error) {
        return error as ApiError;
      }
      throw new Error('no conflict');
    })();
    assert.deepEqual(refusal.status(), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Apply failed with 2 conflicts: conflicts with "kubectl-edit" using v1:\n- .data.a\n- .data.b',
      reason: 'Conflict',
      details: {
        causes: [
          { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-edit" using v1', field: '.data.a' },
          { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-edit" using v1', field: '.data.b' },
        ],
      },
      code: 409,
    });
    // force takes the fields; the same value as another's is shared, no conflict.
    const forced = apply(configMap({ a: '2', b: '2' }), configMap({ a: '1' }), updated, 'helm', true);
    assert.deepEqual([owned(forced.managers, 'helm'), owned(forced.managers, 'kubectl-edit')], [['.data.a'], ['.data.b']]);
    const shared = apply(configMap({ a: '2', b: '2' }), configMap({ b: '2' }), updated, 'helm');
    assert.deepEqual([owned(shared.managers, 'helm'), owned(shared.managers, 'kubectl-edit')], [['.data.b'], ['.data.a', '.data.b']]);
  });

  it('starts an update from the managers it sends, else the live ones; an empty list or one empty entry resets them (fieldmanager.go decodeLiveOrNew)', () => {
    const live = {
      ...configMap({ a: '1' }),
      metadata: { name: 'c', managedFields: encodeManagedFields(apply(configMap({}), configMap({ a: '1' }), [], 'kubectl').managers) },
    };
    const liveManagers = decodeManagedFields(live.metadata.managedFields) as ManagedFieldsEntry[];
    assert.deepEqual(managersBeforeUpdate(live, undefined, ''), liveManagers);
    assert.deepEqual(managersBeforeUpdate(live, [{ manager: 'x', operation: 'Delete' }], ''), liveManagers);
    assert.deepEqual(managersBeforeUpdate(live, [], ''), []);
    assert.deepEqual(managersBeforeUpdate(live, [{}], ''), []);
    const rewritten = [
      { manager: 'other', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {} } } },
    ];
    assert.deepEqual(
      managersBeforeUpdate(live, rewritten, '').map((m) => m.manager),
      ['other'],
    );
    // A subresource's write never rewrites them.
    assert.deepEqual(managersBeforeUpdate(live, [], 'status'), liveManagers);
  });

  const data = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), fc.constantFrom('1', '2'), { maxKeys: 4 });

  it('property: applying the same configuration again changes neither the object nor the managers', () => {
    fc.assert(
      fc.property(data, data, data, (start, first, edit) => {
        const once = apply(configMap(start), configMap(first), [], 'kubectl', true);
        const edited = recordUpdate(
          once.object,
          configMap({ ...first, ...edit }),
          once.managers,
          writer('editor'),
          everything,
          configMaps,
          now,
        );
        const object = configMap({ ...first, ...edit });
        const twice = apply(object, configMap(first), edited, 'kubectl', true);
        const thrice = apply(twice.object, configMap(first), twice.managers, 'kubectl', true, later);
        assert.deepEqual(thrice.object, twice.object);
        assert.deepEqual(thrice.managers, twice.managers);
      }),
    );
  });

  it('property: a field an applier stops applying goes, unless another manager owns it', () => {
    fc.assert(
      fc.property(data, data, data, (first, second, other) => {
        const applied = apply(configMap({}), configMap(first), [], 'kubectl');
        const edited = recordUpdate(
          applied.object,
          configMap({ ...first, ...other }),
          applied.managers,
          writer('editor'),
          everything,
          configMaps,
          now,
        );
        const again = apply(configMap({ ...first, ...other }), configMap(second), edited, 'kubectl', true);
        const result = (again.object.data ?? {}) as Record<string, string>;
        for (const key of Object.keys(first)) {
          const kept = key in second || (key in other && other[key] !== first[key]);
          assert.equal(key in result, kept, `data.${key}`);
        }
        assert.deepEqual(compare(again.object, again.object, configMaps).modified, fieldSetOf([]));
      }),
    );
  });
});
