//! Inter-process and inter-thread primitives the benchmarks measure: SysV message queues and
//! semaphore sets, POSIX message queues and semaphores, futexes (plain and priority-inheriting),
//! pthread mutexes with a chosen protocol. The send/receive/post/wait calls are `#[inline]` and
//! make exactly the one syscall the benchmark times.

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::Duration;

fn rc(r: libc::c_int) -> io::Result<()> {
    crate::check(r).map(|_| ())
}

/// A private SysV message queue (msgget IPC_PRIVATE). Removing it is the caller's (see
/// [`crate::reaper::Resource::SysvMsg`]).
#[derive(Clone, Copy, Debug)]
pub struct SysvQueue(i32);

#[repr(C)]
struct SysvMsg {
    mtype: libc::c_long,
    body: [u64; 2],
}

const SYSV_BODY: usize = 16;

impl SysvQueue {
    pub fn create_private() -> io::Result<SysvQueue> {
        // SAFETY: plain syscall.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        crate::check(id).map(SysvQueue)
    }

    pub fn id(&self) -> i32 {
        self.0
    }

    /// msgsnd of a 16-byte body (type 1).
    #[inline]
    pub fn send(&self, body: [u64; 2]) -> io::Result<()> {
        let m = SysvMsg { mtype: 1, body };
        // SAFETY: m is a valid message of SYSV_BODY body bytes.
        rc(unsafe {
            libc::msgsnd(
                self.0,
                &m as *const SysvMsg as *const libc::c_void,
                SYSV_BODY,
                0,
            )
        })
    }

    /// msgrcv of the next message's 16-byte body.
    #[inline]
    pub fn recv(&self) -> io::Result<[u64; 2]> {
        let mut m = SysvMsg {
            mtype: 0,
            body: [0; 2],
        };
        // SAFETY: m has room for SYSV_BODY bytes of body.
        let n = unsafe {
            libc::msgrcv(
                self.0,
                &mut m as *mut SysvMsg as *mut libc::c_void,
                SYSV_BODY,
                0,
                0,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(m.body)
        }
    }

    /// msgctl IPC_RMID: remove queue `id` (errors ignored: it may be gone).
    pub fn remove(id: i32) {
        // SAFETY: IPC_RMID with a null buffer is valid.
        unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}

/// A private SysV semaphore set (semget IPC_PRIVATE), every semaphore at 0. Removing it is the
/// caller's (see [`crate::reaper::Resource::SysvSem`]).
#[derive(Clone, Copy, Debug)]
pub struct SysvSemSet(i32);

impl SysvSemSet {
    pub fn create_private(n: i32) -> io::Result<SysvSemSet> {
        // SAFETY: plain syscall.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, n, libc::IPC_CREAT | 0o600) };
        crate::check(id).map(SysvSemSet)
    }

    pub fn id(&self) -> i32 {
        self.0
    }

    /// semop of `delta` on semaphore `num` (blocks while the result would be negative).
    #[inline]
    pub fn op(&self, num: u16, delta: i16) -> io::Result<()> {
        let mut op = libc::sembuf {
            sem_num: num,
            sem_op: delta,
            sem_flg: 0,
        };
        // SAFETY: one valid sembuf.
        rc(unsafe { libc::semop(self.0, &mut op, 1) })
    }

    /// semctl IPC_RMID: remove set `id` (errors ignored: it may be gone).
    pub fn remove(id: i32) {
        // SAFETY: IPC_RMID takes no further argument.
        unsafe { libc::semctl(id, 0, libc::IPC_RMID) };
    }
}

/// A POSIX message queue this process created (O_CREAT|O_EXCL); closed on drop, unlinked by
/// [`PosixQueue::unlink`].
pub struct PosixQueue(libc::mqd_t);

impl PosixQueue {
    pub fn create(name: &str, max_msgs: i64, msg_bytes: i64) -> io::Result<PosixQueue> {
        let cname = CString::new(name).map_err(|_| crate::einval())?;
        // SAFETY: mq_attr is plain data.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = max_msgs as _;
        attr.mq_msgsize = msg_bytes as _;
        // SAFETY: valid name and attr pointers.
        let mq = unsafe {
            libc::mq_open(
                cname.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600 as libc::mode_t,
                &attr as *const libc::mq_attr,
            )
        };
        crate::check(mq).map(PosixQueue)
    }

    #[inline]
    pub fn send(&self, msg: &[u8]) -> io::Result<()> {
        // SAFETY: msg is valid for its length.
        rc(unsafe { libc::mq_send(self.0, msg.as_ptr() as *const libc::c_char, msg.len(), 0) })
    }

    /// mq_receive into `buf` (at least the queue's message size): the bytes received.
    #[inline]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for its length.
        let n = unsafe {
            libc::mq_receive(
                self.0,
                buf.as_mut_ptr() as *mut libc::c_char,
                buf.len(),
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// mq_unlink (errors ignored: it may be gone).
    pub fn unlink(name: &str) {
        if let Ok(c) = CString::new(name) {
            // SAFETY: c is a valid NUL-terminated string.
            unsafe { libc::mq_unlink(c.as_ptr()) };
        }
    }
}

impl Drop for PosixQueue {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value opened, once.
        unsafe { libc::mq_close(self.0) };
    }
}

/// An unnamed POSIX semaphore shared between the threads of this process (sem_init pshared 0);
/// boxed so it never moves; destroyed on drop.
pub struct PosixSem(Box<UnsafeCell<libc::sem_t>>);

// SAFETY: a sem_t is only used through sem_post/sem_wait, which are thread-safe.
unsafe impl Sync for PosixSem {}
unsafe impl Send for PosixSem {}

impl PosixSem {
    pub fn new(value: u32) -> io::Result<PosixSem> {
        // SAFETY: sem_t is plain data, initialised by sem_init before use.
        let s = PosixSem(Box::new(unsafe { std::mem::zeroed() }));
        // SAFETY: the sem_t lives in a Box that outlives every user; not shared across processes.
        if unsafe { libc::sem_init(s.0.get(), 0, value) } != 0 {
            let e = io::Error::last_os_error();
            std::mem::forget(s);
            return Err(e);
        }
        Ok(s)
    }

    #[inline]
    pub fn post(&self) -> io::Result<()> {
        // SAFETY: initialised sem_t.
        rc(unsafe { libc::sem_post(self.0.get()) })
    }

    #[inline]
    pub fn wait(&self) -> io::Result<()> {
        // SAFETY: initialised sem_t.
        rc(unsafe { libc::sem_wait(self.0.get()) })
    }
}

impl Drop for PosixSem {
    fn drop(&mut self) {
        // SAFETY: destroying the semaphore this value created, once, with no user left.
        unsafe { libc::sem_destroy(self.0.get()) };
    }
}

const FUTEX_WAIT: i32 = 0;
const FUTEX_WAKE: i32 = 1;
const FUTEX_LOCK_PI: i32 = 6;
const FUTEX_UNLOCK_PI: i32 = 7;
const FUTEX_PRIVATE_FLAG: i32 = 128;

#[inline]
fn futex(word: &AtomicU32, op: i32, val: u32, timeout: Option<&libc::timespec>) -> io::Result<()> {
    let t = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word is a live, aligned u32 for the call's duration.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | FUTEX_PRIVATE_FLAG,
            val,
            t,
            0usize,
            0u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// FUTEX_WAIT (private): sleep while `word` holds `expected`, at most `timeout`.
#[inline]
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> io::Result<()> {
    let ts = timeout.map(|d| crate::clock::ns_to_ts(d.as_nanos() as u64));
    futex(word, FUTEX_WAIT, expected, ts.as_ref())
}

/// FUTEX_WAKE (private): wake up to `n` waiters on `word`.
#[inline]
pub fn futex_wake(word: &AtomicU32, n: u32) {
    let _ = futex(word, FUTEX_WAKE, n, None);
}

/// FUTEX_LOCK_PI: queue on the kernel rt_mutex of `word` (owner's TID), boosting the owner.
#[inline]
pub fn futex_lock_pi(word: &AtomicU32) -> io::Result<()> {
    futex(word, FUTEX_LOCK_PI, 0, None)
}

/// FUTEX_UNLOCK_PI: hand the lock of `word` to its top waiter.
#[inline]
pub fn futex_unlock_pi(word: &AtomicU32) {
    let _ = futex(word, FUTEX_UNLOCK_PI, 0, None);
}

/// The futex word of a signed atomic (a mutex state 0/1/2).
#[inline]
pub fn as_futex_word(a: &AtomicI32) -> &AtomicU32 {
    // SAFETY: AtomicI32 and AtomicU32 have the same size, alignment and representation.
    unsafe { &*(a as *const AtomicI32 as *const AtomicU32) }
}

/// The locking protocol of a [`PthreadMutex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutexProtocol {
    /// PTHREAD_PRIO_INHERIT.
    Inherit,
    /// PTHREAD_PRIO_NONE.
    None,
}

/// A pthread mutex that never moves (boxed) and may be shared between threads.
pub struct PthreadMutex(Box<UnsafeCell<libc::pthread_mutex_t>>);

// SAFETY: pthread mutexes are made to be shared between threads; the cell is only accessed
// through the pthread_mutex_* functions.
unsafe impl Sync for PthreadMutex {}
unsafe impl Send for PthreadMutex {}

impl PthreadMutex {
    /// Err carries pthread's error number.
    pub fn new(protocol: MutexProtocol) -> io::Result<PthreadMutex> {
        let m = PthreadMutex(Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)));
        let proto = match protocol {
            MutexProtocol::Inherit => libc::PTHREAD_PRIO_INHERIT,
            MutexProtocol::None => libc::PTHREAD_PRIO_NONE,
        };
        // SAFETY: attr is initialised before use and destroyed after; the mutex lives in a Box
        // that is not moved while in use.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            if libc::pthread_mutexattr_init(&mut attr) != 0 {
                return Err(io::Error::last_os_error());
            }
            let rc = libc::pthread_mutexattr_setprotocol(&mut attr, proto);
            let rc2 = if rc == 0 {
                libc::pthread_mutex_init(m.0.get(), &attr)
            } else {
                rc
            };
            libc::pthread_mutexattr_destroy(&mut attr);
            if rc2 != 0 {
                return Err(io::Error::from_raw_os_error(rc2));
            }
        }
        Ok(m)
    }

    /// True if the lock was free (taken without waiting).
    #[inline]
    pub fn try_lock(&self) -> bool {
        // SAFETY: initialised mutex.
        unsafe { libc::pthread_mutex_trylock(self.0.get()) == 0 }
    }

    #[inline]
    pub fn lock(&self) {
        // SAFETY: initialised mutex; the return value of a default-type mutex lock is 0.
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
    }

    /// Called by the owner only.
    #[inline]
    pub fn unlock(&self) {
        // SAFETY: initialised mutex, unlocked by its owner (the caller's contract).
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }

    /// glibc's futex word (`__data.__lock`, the first int of pthread_mutex_t on Linux): for a
    /// PI mutex the owner's TID | FUTEX_WAITERS (bit 31) once a waiter is queued in the kernel;
    /// for a plain one 2 once a waiter sleeps.
    #[inline]
    pub fn futex_word(&self) -> i32 {
        // SAFETY: the mutex is 8-byte aligned and at least 4 bytes; reading the word glibc and
        // the kernel update atomically.
        unsafe { &*(self.0.get() as *const AtomicI32) }.load(Ordering::Acquire)
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: no thread uses the mutex any more (the owner of the value drops it).
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}
