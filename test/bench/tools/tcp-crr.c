/*
 * TCP connect/request/response/close rate, as netperf's TCP_CRR measures it (Debian ships no tool for it).
 *
 *   tcp-crr serve PORT                    accept, read one byte, answer one byte, close; forever
 *   tcp-crr run ADDRESS PORT SECONDS PAR  PAR processes each connect, send a byte, read the answer and
 *                                         the server's close, close; for SECONDS; prints
 *                                         {"connections": N, "errors": E, "seconds": S}
 *
 * The server closes first, so the TIME_WAIT state stays with the server's sockets and the client's
 * ephemeral ports are free again at once: a run of tens of thousands of connections does not exhaust
 * them. Every connection crosses the path under test in full: SYN, the request, the answer, both FINs.
 */
#include <arpa/inet.h>
#include <errno.h>
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
	int one = 1;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY) };
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
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
		if (read(c, &b, 1) == 1) (void)!write(c, &b, 1);
		close(c);
	}
}

/* One connection; 0 when the whole exchange went through. */
static int once(const struct sockaddr_in *to)
{
	char b = 'x';
	int one = 1, ok = -1;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0) return -1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s, (const struct sockaddr *)to, sizeof(*to)) == 0 && write(s, &b, 1) == 1 && read(s, &b, 1) == 1 && read(s, &b, 1) == 0) ok = 0;
	close(s);
	return ok;
}

static int runClients(const char *address, int port, double seconds, int parallel)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
	/* Per process: connections done, errors. */
	long *counts = mmap(NULL, sizeof(long) * 2 * parallel, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double start, end;
	if (inet_pton(AF_INET, address, &to.sin_addr) != 1 || counts == MAP_FAILED || parallel < 1) {
		fprintf(stderr, "tcp-crr run: bad address %s or parallelism %d\n", address, parallel);
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
			while (now() < end) counts[2 * p + (once(&to) == 0 ? 0 : 1)]++;
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
	if (argc == 6 && strcmp(argv[1], "run") == 0) return runClients(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: tcp-crr serve PORT | tcp-crr run ADDRESS PORT SECONDS PARALLEL\n");
	return 2;
}
