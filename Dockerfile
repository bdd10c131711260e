# kproxy: a Kafka protocol-aware proxy.
#   docker build -t kproxy .
#   docker run -v $PWD/config/gateway.yaml:/etc/kproxy/kproxy.yaml -p 9092:9092 kproxy
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kproxy ./kproxy
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && useradd --system --uid 10001 --no-create-home kproxy
USER 10001
# 9092: bootstrap; 9100+: one port per broker node (broker_port_base + node id); 9644: admin.
EXPOSE 9092 9644
ENV PYTHONUNBUFFERED=1
HEALTHCHECK --interval=10s --timeout=3s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9644/healthz', timeout=2)"]
ENTRYPOINT ["kproxy"]
CMD ["run", "--config", "/etc/kproxy/kproxy.yaml"]
