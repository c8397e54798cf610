// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The stand-in's socket transport (CCLD_SIM_TRANSPORT=socket): each step's
 * data travels over TCP between the rank processes, as with NCCL's socket
 * network plugin, so that the kernel's TCP path (retransmits, resets) is
 * real.  Credits (slot.posted, slot.consumed) stay in the shared segment:
 * they are the control path, the data path is the socket.
 *
 * Per communicator each process listens on one TCP port, published in the
 * segment's rank table.  A sender opens one connection per (kind, channel,
 * peer), like NCCL's per-channel connections, on its first step and writes
 * frames: a header (connection step, op signature, size) and the data.  A
 * receiver thread per communicator (the "NIC") reads frames straight into
 * the posted slot, then marks it delivered and rings both proxies: the
 * sender counts the step done when it sees delivered, as over RDMA.
 *
 * Only IPv4.  The published address is CCLD_SIM_SOCKET_ADDR, else the
 * first IPv4 address of an interface that is up and not loopback (a rank
 * in its own network namespace), else 127.0.0.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "sim.h"

#define HELLO_MAGIC	0x53444c43u	/* "CLDS" */
#define FRAME_MAGIC	0x46444c43u	/* "CLDF" */
#define SOCK_BUF_BYTES	(512 * 1024)	/* > NCCL_STEPS frames: writes never block */

struct hello {
	uint32_t magic;
	uint8_t kind;
	uint8_t ch;
	uint16_t src;
};

struct frame {
	uint64_t step;		/* connection step t */
	uint64_t sig;
	uint32_t size;
	uint32_t magic;
};

/* an accepted connection being read */
struct inbound {
	int fd;
	int src;		/* -1 until the hello arrived */
	struct sim_conn *conn;
	union {
		struct hello h;
		struct frame f;
		uint8_t b[sizeof(struct frame)];
	} hdr;
	size_t hlen;		/* header bytes read */
	size_t dlen;		/* data bytes read (after the header) */
};

#define SIM_NET_CLOSED_MAX	64

struct sim_net {
	struct ncclComm *comm;
	int listen_fd;
	uint32_t addr;		/* network order */
	uint16_t port;		/* network order */
	int *out_fd;		/* [kind][ch][peer], -1 not connected */
	uint8_t **stage;	/* [kind][ch][peer]: NCCL_STEPS send buffers */
	struct inbound *in;
	int nin, cap;
	/* connections the peer closed, until a recv waits on one (see closed_check) */
	struct closed_conn { struct sim_conn *conn; int src; } closed[SIM_NET_CLOSED_MAX];
	int nclosed;
	pthread_t thread;
	int started;
	volatile int stop;
};

int sim_net_socket(void)
{
	static int mode = -1;
	const char *s;

	if (mode < 0) {
		s = getenv("CCLD_SIM_TRANSPORT");
		mode = s && strcmp(s, "socket") == 0;
	}
	return mode;
}

/* CCLD_SIM_TRANSPORT must be unset, "shm" or "socket" */
int sim_net_check_env(char *err, size_t errlen)
{
	const char *s = getenv("CCLD_SIM_TRANSPORT");

	if (!s || !*s || strcmp(s, "shm") == 0 || strcmp(s, "socket") == 0)
		return 0;
	snprintf(err, errlen, "CCLD_SIM_TRANSPORT=%s: expected shm or socket", s);
	return -1;
}

static uint32_t own_address(void)
{
	const char *s = getenv("CCLD_SIM_SOCKET_ADDR");
	struct ifaddrs *ifs, *i;
	struct in_addr a;
	uint32_t found = htonl(INADDR_LOOPBACK);

	if (s && inet_pton(AF_INET, s, &a) == 1)
		return a.s_addr;
	if (getifaddrs(&ifs))
		return found;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		found = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		break;
	}
	freeifaddrs(ifs);
	return found;
}

static void set_buffers(int fd)
{
	int one = 1, size = SOCK_BUF_BYTES;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

/* Before the comm joins its segment: the listening socket. */
ncclResult_t sim_net_listen(struct ncclComm *comm)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	size_t nout = (size_t)SIM_CONN_KINDS * SIM_MAX_CHANNELS * comm->nRanks, i;
	struct sim_net *net;

	net = calloc(1, sizeof(*net));
	if (!net || !(net->out_fd = malloc(nout * sizeof(int))) ||
	    !(net->stage = calloc(nout, sizeof(*net->stage)))) {
		if (net)
			free(net->out_fd);
		free(net);
		SIM_WARN("socket transport: out of memory");
		return ncclSystemError;
	}
	for (i = 0; i < nout; i++)
		net->out_fd[i] = -1;
	net->comm = comm;
	net->addr = own_address();
	sa.sin_addr.s_addr = net->addr;
	net->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (net->listen_fd < 0 || bind(net->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(net->listen_fd, 128) ||
	    getsockname(net->listen_fd, (struct sockaddr *)&sa, &len)) {
		char a[INET_ADDRSTRLEN] = "?";

		inet_ntop(AF_INET, &net->addr, a, sizeof(a));
		SIM_WARN("socket transport: cannot listen on %s: %s", a,
			 strerror(errno));
		if (net->listen_fd >= 0)
			close(net->listen_fd);
		free(net->out_fd);
		free(net->stage);
		free(net);
		return ncclSystemError;
	}
	net->port = sa.sin_port;
	comm->simNet = net;
	return ncclSuccess;
}

void sim_net_publish(const struct ncclComm *comm, struct sim_rank_info *ri)
{
	ri->net_addr = comm->simNet ? comm->simNet->addr : 0;
	ri->net_port = comm->simNet ? comm->simNet->port : 0;
}

static int read_some(struct inbound *in, void *buf, size_t want)
{
	ssize_t n = recv(in->fd, buf, want, MSG_DONTWAIT);

	if (n > 0)
		return (int)n;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;	/* closed or broken */
}

/* a buffer of IN's connection is posted and its data has not come */
static bool waits_for_data(const struct inbound *in)
{
	int s;

	for (s = 0; in->conn && s < NCCL_STEPS; s++)
		if (__atomic_load_n(&in->conn->slot[s].posted, __ATOMIC_ACQUIRE) >
		    __atomic_load_n(&in->conn->slot[s].delivered, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/* real NCCL's words when a read finds its connection closed (src/misc/socket.cc) */
static void warn_closed(const struct sim_net *net, int src)
{
	const struct sim_rank_info *ri = &net->comm->seg->ranks[src];
	struct in_addr a = { .s_addr = ri->net_addr };
	char addr[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &a, addr, sizeof(addr));
	SIM_WARN("socketProgress: Connection closed by remote peer %s<%u>", addr,
		 ntohs(ri->net_port));
}

/*
 * The peer closed a connection (it exited, was killed, or tore its comm
 * down).  Real NCCL finds out when its proxy reads for a posted recv: the
 * warning comes then, at once if one waits already, else once one does.
 */
static void peer_closed(struct sim_net *net, const struct inbound *in)
{
	if (net->stop || in->src < 0 || !in->conn)
		return;
	if (waits_for_data(in)) {
		warn_closed(net, in->src);
		return;
	}
	if (net->nclosed < SIM_NET_CLOSED_MAX)
		net->closed[net->nclosed++] = (struct closed_conn){ in->conn, in->src };
}

/* A recv now waits on a closed connection: warned once, then forgotten. */
static void closed_check(struct sim_net *net)
{
	int i;

	for (i = net->nclosed - 1; i >= 0; i--) {
		struct inbound probe = { .src = net->closed[i].src, .conn = net->closed[i].conn };

		if (!waits_for_data(&probe))
			continue;
		warn_closed(net, probe.src);
		net->closed[i] = net->closed[--net->nclosed];
	}
}

static void drop_inbound(struct sim_net *net, int i, const char *why)
{
	const struct inbound *in = &net->in[i];

	if (why)
		fprintf(stderr, "ccld-sim: pid %d socket transport: connection from rank %d: %s\n",
			(int)getpid(), in->src, why);
	peer_closed(net, in);
	close(net->in[i].fd);
	net->in[i] = net->in[--net->nin];
}

/* A whole step arrived: the slot is the receiver's, as after an RDMA write. */
static void deliver(struct sim_net *net, struct inbound *in)
{
	struct sim_slot *slot = &in->conn->slot[in->hdr.f.step % NCCL_STEPS];

	slot->size = in->hdr.f.size;
	slot->sig = in->hdr.f.sig;
	__atomic_store_n(&slot->delivered, in->hdr.f.step + 1, __ATOMIC_RELEASE);
	sim_bell_ring(net->comm->proxyState->bell);
	sim_bell_ring(net->comm->peerBells[in->src]);
}

/* Reads what is there; returns 0, or -1 with WHY when the connection must go. */
static int pump(struct sim_net *net, struct inbound *in, const char **why)
{
	struct ncclComm *comm = net->comm;
	int n;

	for (;;) {
		size_t hsize = in->src < 0 ? sizeof(struct hello) : sizeof(struct frame);

		if (in->hlen < hsize) {
			n = read_some(in, in->hdr.b + in->hlen, hsize - in->hlen);
			if (n <= 0) {
				/* a close between frames is the peer's teardown */
				*why = n < 0 && (in->hlen || in->src < 0) ? "closed mid-header" : NULL;
				return n;
			}
			in->hlen += n;
			if (in->hlen < hsize)
				continue;
			if (in->src < 0) {
				struct hello h = in->hdr.h;

				if (h.magic != HELLO_MAGIC || h.kind >= SIM_CONN_KINDS ||
				    h.ch >= SIM_MAX_CHANNELS || h.src >= comm->nRanks) {
					*why = "bad hello";
					return -1;
				}
				in->src = h.src;
				in->conn = sim_conn(comm, h.kind, h.ch, h.src, comm->rank);
				in->hlen = 0;
				continue;
			}
			if (in->hdr.f.magic != FRAME_MAGIC || in->hdr.f.size > SIM_STEP_BYTES ||
			    __atomic_load_n(&in->conn->slot[in->hdr.f.step % NCCL_STEPS].posted,
					    __ATOMIC_ACQUIRE) != in->hdr.f.step + 1) {
				*why = "frame for a slot that is not posted";
				return -1;
			}
			in->dlen = 0;
		}
		if (in->dlen < in->hdr.f.size) {
			uint8_t *data = in->conn->data[in->hdr.f.step % NCCL_STEPS];

			n = read_some(in, data + in->dlen, in->hdr.f.size - in->dlen);
			if (n <= 0) {
				*why = n < 0 ? "closed mid-frame" : NULL;
				return n;
			}
			in->dlen += n;
			if (in->dlen < in->hdr.f.size)
				continue;
		}
		deliver(net, in);
		in->hlen = in->dlen = 0;
	}
}

static void accept_one(struct sim_net *net)
{
	int fd = accept4(net->listen_fd, NULL, NULL, SOCK_CLOEXEC), cap;
	struct inbound *in;

	if (fd < 0)
		return;
	if (net->nin == net->cap) {
		cap = net->cap ? 2 * net->cap : 8;
		in = realloc(net->in, cap * sizeof(*in));
		if (!in) {
			close(fd);
			return;
		}
		net->in = in;
		net->cap = cap;
	}
	set_buffers(fd);
	in = &net->in[net->nin++];
	memset(in, 0, sizeof(*in));
	in->fd = fd;
	in->src = -1;
}

static void *nic_main(void *arg)
{
	struct sim_net *net = arg;
	struct pollfd *pfd = NULL;
	int npfd = 0, i;

	while (!net->stop) {
		if (npfd < net->nin + 1) {
			struct pollfd *p = realloc(pfd, (net->nin + 1) * sizeof(*pfd));

			if (!p) {
				usleep(10000);
				continue;
			}
			pfd = p;
			npfd = net->nin + 1;
		}
		pfd[0] = (struct pollfd){ .fd = net->listen_fd, .events = POLLIN };
		for (i = 0; i < net->nin; i++)
			pfd[i + 1] = (struct pollfd){ .fd = net->in[i].fd, .events = POLLIN };
		/* a stalled network (CCLD_SIM_FAULT netstall) delivers nothing */
		if (sim_net_stalled(sim_now_ns())) {
			usleep(20000);
			continue;
		}
		closed_check(net);
		if (poll(pfd, net->nin + 1, 100) <= 0)
			continue;
		for (i = net->nin - 1; i >= 0; i--) {
			const char *why = NULL;

			if (pfd[i + 1].revents && pump(net, &net->in[i], &why) < 0)
				drop_inbound(net, i, net->stop ? NULL : why);
		}
		if (pfd[0].revents & POLLIN)
			accept_one(net);
	}
	free(pfd);
	return NULL;
}

/* Once every rank joined (peer doorbells mapped): the receiving thread. */
ncclResult_t sim_net_start(struct ncclComm *comm)
{
	struct sim_net *net = comm->simNet;
	int err;

	if (!net)
		return ncclSuccess;
	err = pthread_create(&net->thread, NULL, nic_main, net);
	if (err) {
		SIM_WARN("socket transport: cannot start its thread: %s", strerror(err));
		return ncclSystemError;
	}
	net->started = 1;
	return ncclSuccess;
}

static int connect_peer(struct sim_net *net, int kind, int ch, int peer)
{
	const struct sim_rank_info *ri = &net->comm->seg->ranks[peer];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = ri->net_port,
				  .sin_addr.s_addr = ri->net_addr };
	struct hello h = { HELLO_MAGIC, (uint8_t)kind, (uint8_t)ch,
			   (uint16_t)net->comm->rank };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	set_buffers(fd);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/*
 * The send buffer of step T on connection (KIND, CH, this rank -> PEER): the
 * data is copied there when the GPU hands it over (the user buffer may be
 * reused after that) and written to the socket later.  NULL: no memory.
 */
uint8_t *sim_net_stage(struct ncclComm *comm, int kind, int ch, int peer, uint64_t t)
{
	uint8_t **st = &comm->simNet->stage[((size_t)kind * SIM_MAX_CHANNELS + ch) *
					    comm->nRanks + peer];

	if (!*st && !(*st = malloc((size_t)NCCL_STEPS * SIM_STEP_BYTES)))
		return NULL;
	return *st + (t % NCCL_STEPS) * SIM_STEP_BYTES;
}

/*
 * Writes step T of connection (KIND, CH, this rank -> PEER).  Returns 0, or
 * -1 with errno; the caller retries later (the connection is re-opened).
 */
int sim_net_send(struct ncclComm *comm, int kind, int ch, int peer, uint64_t t, uint64_t sig,
		 const void *data, uint32_t len)
{
	struct sim_net *net = comm->simNet;
	int *fd = &net->out_fd[((size_t)kind * SIM_MAX_CHANNELS + ch) * comm->nRanks + peer];
	struct frame f = { t, sig, len, FRAME_MAGIC };
	struct iovec iov[2] = { { &f, sizeof(f) }, { (void *)data, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t left = sizeof(f) + len;
	ssize_t n;

	if (*fd < 0 && (*fd = connect_peer(net, kind, ch, peer)) < 0)
		return -1;
	/* SOCK_BUF_BYTES holds every frame a connection may have in flight */
	while (left) {
		n = sendmsg(*fd, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;

			close(*fd);
			*fd = -1;
			errno = e;
			return -1;
		}
		left -= n;
		while (n > 0 && msg.msg_iovlen) {
			size_t take = (size_t)n < msg.msg_iov->iov_len ? (size_t)n :
				      msg.msg_iov->iov_len;

			msg.msg_iov->iov_base = (uint8_t *)msg.msg_iov->iov_base + take;
			msg.msg_iov->iov_len -= take;
			n -= take;
			if (!msg.msg_iov->iov_len) {
				msg.msg_iov++;
				msg.msg_iovlen--;
			}
		}
	}
	return 0;
}

/* The communicator is gone: the thread ends and every socket is closed. */
void sim_net_close(struct ncclComm *comm)
{
	struct sim_net *net = comm->simNet;
	size_t nout = (size_t)SIM_CONN_KINDS * SIM_MAX_CHANNELS * comm->nRanks, i;

	if (!net)
		return;
	net->stop = 1;
	if (net->started)
		pthread_join(net->thread, NULL);
	for (i = 0; i < nout; i++) {
		if (net->out_fd[i] >= 0)
			close(net->out_fd[i]);
		free(net->stage[i]);
	}
	for (i = 0; i < (size_t)net->nin; i++)
		close(net->in[i].fd);
	close(net->listen_fd);
	free(net->in);
	free(net->stage);
	free(net->out_fd);
	free(net);
	comm->simNet = NULL;
}
