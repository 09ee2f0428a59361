/*
 * TCP connect/request/response/close rate, as netperf's TCP_CRR measures it (Debian ships no tool for it).
 *
 *   tcp-crr serve PORT                    accept, read one byte, answer one byte, close; forever (a
 *                                         connection whose first byte is 'r' is echoed until it closes)
 *   tcp-crr run ADDRESS PORT SECONDS PAR  PAR processes each connect, send a byte, read the answer and
 *                                         the server's close, close; for SECONDS; prints
 *                                         {"connections": N, "errors": E, "seconds": S}
 *   tcp-crr rr ADDRESS PORT SECONDS       one connection, one byte back and forth for SECONDS (as
 *                                         sockperf ping-pong, which Debian ships without IPv6); prints
 *                                         {"roundTrips": N, "p50Us": X, "p99Us": Y}
 *
 * The server closes first, so the TIME_WAIT state stays with the server's sockets and the client's
 * ephemeral ports are free again at once: a run of tens of thousands of connections does not exhaust
 * them. Every connection crosses the path under test in full: SYN, the request, the answer, both FINs.
 * IPv4 and IPv6: the server listens on both (one IPv6 socket that takes IPv4 too), ADDRESS is either.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int serve(int port)
{
	int one = 1, zero = 0;
	int s = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_ANY_INIT };
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1024) < 0) {
		perror("tcp-crr serve");
		return 1;
	}
	signal(SIGCHLD, SIG_IGN);
	/* Two acceptors: the client runs at most two connections at a time. */
	if (fork() < 0) perror("fork");
	for (;;) {
		char b;
		int c = accept(s, NULL, NULL);
		if (c < 0) continue;
		if (read(c, &b, 1) == 1 && write(c, &b, 1) == 1 && b == 'r')
			while (read(c, &b, 1) == 1 && write(c, &b, 1) == 1)
				;
		close(c);
	}
}

static int compareDoubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static struct addrinfo *resolve(const char *address, const char *port)
{
	const struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
	struct addrinfo *to = NULL;
	if (getaddrinfo(address, port, &hints, &to) != 0) {
		fprintf(stderr, "tcp-crr: bad address %s or port %s\n", address, port);
		return NULL;
	}
	return to;
}

/* Request/response on one connection: each round trip's time, then the 50th and 99th percentiles. */
static int roundTrips(const char *address, const char *port, double seconds)
{
	struct addrinfo *to = resolve(address, port);
	int one = 1, s;
	size_t n = 0, room = 1 << 16;
	double *rtt = malloc(room * sizeof(double)), end;
	char b = 'r';
	if (!to || !rtt) return 2;
	s = socket(to->ai_family, SOCK_STREAM, 0);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (s < 0 || connect(s, to->ai_addr, to->ai_addrlen) != 0) {
		perror("tcp-crr rr");
		return 1;
	}
	end = now() + seconds;
	for (double t = now(); t < end; t = now()) {
		if (write(s, &b, 1) != 1 || read(s, &b, 1) != 1) {
			perror("tcp-crr rr");
			return 1;
		}
		if (n == room && !(rtt = realloc(rtt, (room *= 2) * sizeof(double)))) return 1;
		rtt[n++] = (now() - t) * 1e6;
	}
	close(s);
	if (n == 0) return 1;
	qsort(rtt, n, sizeof(double), compareDoubles);
	printf("{\"roundTrips\": %zu, \"p50Us\": %.3f, \"p99Us\": %.3f}\n", n, rtt[n / 2], rtt[(size_t)(n * 0.99)]);
	return 0;
}

/* One connection; 0 when the whole exchange went through. */
static int once(const struct addrinfo *to)
{
	char b = 'x';
	int one = 1, ok = -1;
	int s = socket(to->ai_family, SOCK_STREAM, 0);
	if (s < 0) return -1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s, to->ai_addr, to->ai_addrlen) == 0 && write(s, &b, 1) == 1 && read(s, &b, 1) == 1 && read(s, &b, 1) == 0) ok = 0;
	close(s);
	return ok;
}

static int runClients(const char *address, const char *port, double seconds, int parallel)
{
	struct addrinfo *to = resolve(address, port);
	/* Per process: connections done, errors. */
	long *counts = mmap(NULL, sizeof(long) * 2 * parallel, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double start, end;
	if (!to || counts == MAP_FAILED || parallel < 1) {
		fprintf(stderr, "tcp-crr run: parallelism %d\n", parallel);
		return 2;
	}
	memset(counts, 0, sizeof(long) * 2 * parallel);
	start = now();
	end = start + seconds;
	for (int p = 0; p < parallel; p++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			while (now() < end) counts[2 * p + (once(to) == 0 ? 0 : 1)]++;
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	{
		long done = 0, errors = 0;
		for (int p = 0; p < parallel; p++) done += counts[2 * p], errors += counts[2 * p + 1];
		printf("{\"connections\": %ld, \"errors\": %ld, \"seconds\": %.3f}\n", done, errors, now() - start);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(atoi(argv[2]));
	if (argc == 6 && strcmp(argv[1], "run") == 0) return runClients(argv[2], argv[3], atof(argv[4]), atoi(argv[5]));
	if (argc == 5 && strcmp(argv[1], "rr") == 0) return roundTrips(argv[2], argv[3], atof(argv[4]));
	fprintf(stderr, "usage: tcp-crr serve PORT | tcp-crr run ADDRESS PORT SECONDS PARALLEL | tcp-crr rr ADDRESS PORT SECONDS\n");
	return 2;
}
