"""`kproxy demo`: librdkafka's mock cluster inside the process, kproxy in front of it."""
