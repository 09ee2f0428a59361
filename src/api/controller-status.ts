/**
 * What a cluster's controller reports each round (the run directory's `controller.json`): the gateway it
 * elected, each peering's state, the Ready nodes; and the endpoints it reflects as a hub
 * (`reflections.json`), with the address a pod of the receiving peer dials. Checked by the validators
 * the build compiled from controller-status-schema.ts.
 */
import { checkCompiled } from './compiled-validators';
import type { ControllerStatus, Reflection } from './controller-status-schema';

export type { ControllerStatus, Reflection } from './controller-status-schema';

export const readControllerStatus = (value: unknown): ControllerStatus => checkCompiled('controllerStatus', value);
export const readReflections = (value: unknown): Reflection[] => checkCompiled('reflections', value);
