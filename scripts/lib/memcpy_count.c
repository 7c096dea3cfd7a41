/* memcpy counted by call site (scripts/copies.sh): an LD_PRELOAD shim that forwards
 * every memcpy to libc's and, while counting is on, tallies (return address, size)
 * for calls made on threads whose name starts with $COPIES_THREADS (default
 * "switchyard-lane"). SIGUSR2 turns counting on; the next SIGUSR2 turns it off and
 * writes "address size count" lines to $COPIES_OUT.PID, then /proc/PID/maps beside
 * them (the addresses are resolved against the binary's load address).
 *
 * A diagnostic, not part of the gateway: Rust moves futures and large values with
 * memcpy, so what a request copies, and from where, shows which types to shrink. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 65536

static struct { void *site; size_t size; unsigned long count; } table[SLOTS];
static volatile int counting;
static __thread int watched = -1;
static void *(*libc_memcpy)(void *, const void *, size_t);

static void write_out(void) {
  const char *prefix = getenv("COPIES_OUT");
  char path[512], maps[64], line[4096];
  snprintf(path, sizeof path, "%s.%d", prefix ? prefix : "/tmp/copies", getpid());
  FILE *out = fopen(path, "w");
  if (!out) return;
  for (int i = 0; i < SLOTS; i++)
    if (table[i].count) fprintf(out, "%p %zu %lu\n", table[i].site, table[i].size, table[i].count);
  fclose(out);
  snprintf(maps, sizeof maps, "/proc/%d/maps", getpid());
  snprintf(path, sizeof path, "%s.%d.maps", prefix ? prefix : "/tmp/copies", getpid());
  FILE *in = fopen(maps, "r"), *copy = fopen(path, "w");
  while (in && copy && fgets(line, sizeof line, in)) fputs(line, copy);
  if (in) fclose(in);
  if (copy) fclose(copy);
}

static void toggle(int sig) {
  (void)sig;
  counting = !counting;
  if (!counting) write_out();
}

__attribute__((constructor)) static void start(void) {
  libc_memcpy = dlsym(RTLD_NEXT, "memcpy");
  signal(SIGUSR2, toggle);
}

static void tally(void *site, size_t size) {
  uintptr_t hash = ((uintptr_t)site * 2654435761u) ^ (size * 40503u);
  for (int probe = 0; probe < SLOTS; probe++) {
    int i = (int)((hash + (uintptr_t)probe) % SLOTS);
    if (table[i].count == 0) {
      table[i].site = site;
      table[i].size = size;
    } else if (table[i].site != site || table[i].size != size) {
      continue;
    }
    __atomic_add_fetch(&table[i].count, 1, __ATOMIC_RELAXED);
    return;
  }
}

void *memcpy(void *dest, const void *src, size_t size) {
  if (counting) {
    if (watched < 0) {
      const char *prefix = getenv("COPIES_THREADS");
      char name[32] = {0};
      pthread_getname_np(pthread_self(), name, sizeof name);
      prefix = prefix ? prefix : "switchyard-lane";
      watched = strncmp(name, prefix, strlen(prefix)) == 0;
    }
    if (watched) tally(__builtin_return_address(0), size);
  }
  if (!libc_memcpy) libc_memcpy = dlsym(RTLD_NEXT, "memcpy");
  return libc_memcpy(dest, src, size);
}
