"""Analysis: experiments and audits built on the runners. Statistics (:mod:`.stats`), the
oracle-P1 ceiling and the repair ladder (:mod:`.ceiling`), ablations (:mod:`.ablations`),
behaviour metrics (:mod:`.behaviour`), the curriculum (:mod:`.curriculum`), resource estimates
(:mod:`.estimates`), the validity gate (:mod:`.validity`), single-field shortcuts
(:mod:`.shortcuts`), the tell audit (:mod:`.tell_audit`), the admission of generated tasks
(:mod:`.admission`) and the build of the generated suite's file (:mod:`.suite_build`), and the
suite as tables (:mod:`.suite_tables`)."""
