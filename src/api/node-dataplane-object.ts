/**
 * A NodeDataplane object for a typed spec, as the controller writes it. Apart from the reader
 * (node-dataplane.ts), which the agent loads: building an object needs the resource's definition, and with
 * it TypeBox.
 */
import { writeNodeDataplaneSpec } from './node-dataplane';
import { nodeDataplaneResource } from './node-dataplane-resource';
import { makeObject } from './resource';
import type { NodeDataplaneSpec } from '../nodespec/spec';

/** The object for a typed spec, named after its node. */
export const nodeDataplaneObject = (spec: NodeDataplaneSpec) => makeObject(nodeDataplaneResource, spec.node.name, writeNodeDataplaneSpec(spec));
