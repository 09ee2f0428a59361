/**
 * The NodeDataplane resource's plural, alone: the agent names its collection with it and must not load
 * the resource's TypeBox schemas to do so (it checks specs with the build's validators).
 */
export const nodeDataplanePlural = 'nodedataplanes';
