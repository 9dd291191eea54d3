# Build fragment for nthlib/core: the runtime core (context switch, stacks,
# nano-threads, ready queues, VPs, idle loop).
libnth_la_SOURCES += \
	nthlib/internal.h nthlib/context.h nthlib/futex_lock.h nthlib/tsan_annot.h \
	nthlib/sched.c nthlib/nano_thread.c nthlib/ready_queue.c nthlib/steal.c \
	nthlib/stack.c nthlib/vp.c nthlib/idle.c nthlib/init.c nthlib/config.c nthlib/env_msg.h nthlib/env_names.h \
	nthlib/cgroup.c nthlib/topology.c nthlib/overflow.c nthlib/watchdog.c \
	nthlib/tls_switch.c nthlib/fork.c nthlib/ldso_lock.c

if CTX_X86_64
libnth_la_SOURCES += nthlib/context_x86_64.S nthlib/context_asm.c
endif
if CTX_AARCH64
libnth_la_SOURCES += nthlib/context_aarch64.S nthlib/context_asm.c
endif
if CTX_UCONTEXT
libnth_la_SOURCES += nthlib/context_ucontext.c
endif
# Every context file ships in the tarball, whichever one this host builds.
EXTRA_DIST += nthlib/context_x86_64.S nthlib/context_aarch64.S \
	nthlib/context_asm.c nthlib/context_ucontext.c
libnth_la_LIBADD += -ldl
