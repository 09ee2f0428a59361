/**
 * A client-node 1.4.0 patch call made a forced server-side apply: `Content-Type:
 * application/apply-patch+yaml` (PatchStrategy.ServerSideApply; the JSON body is YAML) and `force=true`,
 * which client-node's custom-object patch calls have no parameter for. Forced: a Strait process is the
 * one writer of what it applies (the controller its objects' spec and labels, the agent its node's
 * status), so a field another manager changed, or wrote before Strait applied (objects a Strait that
 * replaced them created), is taken back rather than left in a conflict no one resolves. The manager
 * names say who wrote what in metadata.managedFields.
 */
import { type ConfigurationOptions, Observable, PatchStrategy, type RequestContext, type ResponseContext } from '@kubernetes/client-node';

export const fieldManagers = { controller: 'strait-controller', agent: 'strait-agent' } as const;

export const forcedApply: ConfigurationOptions = {
  middleware: [
    {
      pre: (context: RequestContext) => {
        context.setHeaderParam('Content-Type', PatchStrategy.ServerSideApply);
        context.setQueryParam('force', 'true');
        return new Observable(Promise.resolve(context));
      },
      post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
    },
  ],
  middlewareMergeStrategy: 'append',
};
