"""What becomes of a person's answer, however it travels.

Every road an answer takes (a click or ``session.act`` in the kernel, an
AG-UI resume at the served agent, the AG-UI client in the notebook, the
service console) goes through the same pieces:

* :mod:`~nb_hitl.answers.front`: the front door (shape, lookup, ``reply_id``,
  open, once, deadline, the kind's decision; batches all or nothing);
* :mod:`~nb_hitl.answers.lifecycle`: the one pause-status table;
* :mod:`~nb_hitl.answers.record`: the one audit record (who, from where,
  what was decided, what the model was told);
* :mod:`~nb_hitl.answers.outcome`: what a carrier reports back to the person
  (``applied``, ``answered_elsewhere``, ``not_applied``, ``unknown``).

Untrusted schemas and streams are checked by :mod:`nb_hitl.guard`.
"""
