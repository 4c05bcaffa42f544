"""``serve-sim``: the simulated panel behind real HTTP APIs, with fault injection.

Why: the ``openai`` and ``gemini`` backends talk to providers over HTTP, and the only way
to test them honestly (request encoding, response parsing, retries, timeouts, rate limits,
connection reuse, concurrency) is to point them at a real server. This package serves the
``sim`` panel of ``params.yaml`` on loopback through

* the OpenAI chat-completions API: ``POST /v1/chat/completions``, ``GET /v1/models``;
* the Gemini API: ``POST /v1beta/models/{model}:generateContent``, ``GET /v1beta/models``
  (``/v1`` and ``/v1alpha`` are accepted too);
* OpenAI's Files and Batch APIs (``/v1/files``, ``/v1/batches``; ``openai_batch``): a
  batch's lines answered as the chat route answers them, counted per model;
* Gemini's Files API and batch mode (resumable ``/upload/v1beta/files``,
  ``…:batchGenerateContent``, ``/v1beta/batches``; ``gemini_batch``): a job's lines
  answered as the generateContent route answers them, counted per model;
* the OpenAI images API: ``POST /v1/images/generations`` (``b64_json`` answers drawn by
  the study that declares a ``sim_images`` hook, FRAME's offline renderer, at most 256 px,
  seeded by a ``seed`` field if the request has one, else by the prompt), so the
  ``openai`` text-to-image backend of FRAME's benchmark construction is tested over HTTP.

The answers are exactly :meth:`SimBackend.answer` of the request the HTTP body encodes
(the sim depends only on seed, model id, prompt, image bytes and sampling), so a client
backend run against this server must reproduce the ``sim`` backend's answers bit for bit.

One module per role:

* ``server``: :class:`SimServer` (lifecycle, the answer to each route), ``check_loopback``,
  and the ``judgebias serve-sim`` command (``server_from_args``, ``run_from_args``);
* ``args``: the command's options (imported by every ``judgebias`` command to build its
  parser, which is why this ``__init__`` imports nothing: import from the modules);
* ``handler``: the HTTP layer (routing, key check, outage, quota and faults in order);
* ``openai_wire``, ``gemini_wire``: each API's request parsing, answers and error bodies;
  ``openai_batch``, ``gemini_batch``: the files and batches each provider's batch API
  keeps, and their routes;
  ``wire``: what both share (the :class:`Reply`, sampling, base64, response ids);
* ``panel``: what is answered (the sim panel, or the fixed ``no_compute`` answer);
* ``prefix_cache``: the prompt prefixes each API has seen, and the cached tokens each
  answer reports as its provider does (OpenAI, Gemini: automatic; Anthropic: what
  ``cache_control`` marks), bounded by ``--cache-ttl`` and ``--cache-tokens``;
* ``faults``: :class:`Faults` and their seeded per-request draw;
* ``quotas``: :class:`RequestQuota`, a provider's requests-per-minute token bucket;
* ``stats``: the request counters; ``errors``: ``ServeSimError`` and ``BadRequest``.

No pipeline job imports this package, so editing it reruns nothing.
"""
