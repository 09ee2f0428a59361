/**
 * A NodeDataplane object for a typed spec, as the controller writes it. Apart from the reader
 * (node-dataplane.ts), which every agent loads at its start: an agent builds no objects.
 */
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { writeNodeDataplaneSpec } from './node-dataplane';
import { makeObject } from './object';
import { nodeDataplaneNames } from './resource-names';

/** The object for a typed spec, named after its node. */
export const nodeDataplaneObject = (spec: NodeDataplaneSpec) =>
  makeObject(nodeDataplaneNames, spec.node.name, writeNodeDataplaneSpec(spec));
