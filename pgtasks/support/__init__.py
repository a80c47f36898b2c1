"""Building blocks below every layer, importing nothing else of pgtasks: the backoff that every
retry loop waits by (:mod:`pgtasks.support.backoff`) and the background loop that every periodic
thread of the worker and the beat runs on (:mod:`pgtasks.support.loops`)."""
