"""Real client libraries' partition assignors, judged by the model's client invariants.

Harnesses (java/: kafka-clients through Maven; go/: franz-go's kgo balancers) answer NDJSON requests
(protocol.md); `assignors.py` drives them with Hypothesis-generated leader inputs and is the
`groupcheck assignors` command. `consumers.py` builds and runs whole consumers (librdkafka,
franz-go's kgo, Java's KafkaConsumer: rdkafka_consumer.py, go-consumer/, java-consumer/) for
`groupcheck check --client` (conformance/clientcheck).
"""
