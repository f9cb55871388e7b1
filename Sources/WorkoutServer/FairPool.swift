import NIOCore
import NIOPosix
import Synchronization

/// A fixed pool of threads shared fairly between keys (the athletes or teams asking): work of one key never takes
/// more than `perKeyThreads` of the threads, and waiting work is served in turn, one key after the other, not first
/// come first served.
///
/// So one athlete's eight slow queries hold at most half the store threads while every other athlete's requests
/// are served on the rest; and one athlete's 67 uploads wait behind each other, never in front of another
/// athlete's. A key with `perKeyQueue` calls already waiting or running is refused (`submit` returns false: the
/// caller answers 429 with Retry-After).
final class FairPool: Sendable {
    typealias Job = @Sendable () -> Void

    private struct State: ~Copyable {
        var waiting: [String: CircularBuffer<(id: UInt64, job: Job)>] = [:]
        /// Keys with waiting work, in the order they are served (a key served goes to the back).
        var turn = CircularBuffer<String>()
        var running: [String: Int] = [:]
        var idleThreads: Int
        var nextID: UInt64 = 0
        var total = 0
    }

    let threads: Int
    /// The most threads one key's work holds at once.
    let perKeyThreads: Int
    /// The most calls of one key waiting or running at once (beyond: refused).
    let perKeyQueue: Int
    /// The most calls waiting or running in all (beyond: refused).
    let totalQueue: Int
    private let pool: NIOThreadPool
    private let state: Mutex<State>

    init(threads: Int, perKeyThreads: Int, perKeyQueue: Int, totalQueue: Int) {
        self.threads = max(1, threads)
        self.perKeyThreads = max(1, min(perKeyThreads, threads))
        self.perKeyQueue = max(1, perKeyQueue)
        self.totalQueue = max(1, totalQueue)
        pool = NIOThreadPool(numberOfThreads: self.threads)
        pool.start()
        state = Mutex(State(idleThreads: self.threads))
    }

    /// How many calls of `key` are waiting or running now.
    func load(of key: String) -> Int {
        state.withLock { ($0.waiting[key]?.count ?? 0) + ($0.running[key] ?? 0) }
    }

    /// Queues `job` for `key`; nil when the key (or the pool) already has its most calls waiting or running, else
    /// an id that `cancel` takes while the job still waits.
    func submit(key: String, _ job: @escaping Job) -> UInt64? {
        enum Outcome { case refused, started(UInt64), queued(UInt64) }
        let outcome = state.withLock { state -> Outcome in
            let load = (state.waiting[key]?.count ?? 0) + (state.running[key] ?? 0)
            guard load < perKeyQueue, state.total < totalQueue else { return .refused }
            state.nextID += 1
            state.total += 1
            if state.idleThreads > 0, (state.running[key] ?? 0) < perKeyThreads {
                state.idleThreads -= 1
                state.running[key, default: 0] += 1
                return .started(state.nextID)
            }
            if state.waiting[key]?.isEmpty ?? true { state.turn.append(key) }
            state.waiting[key, default: CircularBuffer()].append((state.nextID, job))
            return .queued(state.nextID)
        }
        switch outcome {
        case .refused: return nil
        case .queued(let id): return id
        case .started(let id):
            pool.submit { _ in self.work(key: key, first: job) }
            return id
        }
    }

    /// Removes a job that still waits (its caller went away); false when it already runs or ran.
    func cancel(key: String, id: UInt64) -> Bool {
        state.withLock { state in
            guard var queue = state.waiting[key], let index = queue.firstIndex(where: { $0.id == id }) else {
                return false
            }
            queue.remove(at: index)
            state.total -= 1
            if queue.isEmpty {
                state.waiting[key] = nil
                state.turn.removeAll { $0 == key }
            } else {
                state.waiting[key] = queue
            }
            return true
        }
    }

    /// Runs `first`, then waiting jobs in turn for as long as there are any this thread may take.
    private func work(key: String, first: Job) {
        var (key, job) = (key, first)
        while true {
            job()
            guard let next = finishAndTakeNext(key: key) else { return }
            (key, job) = next
        }
    }

    private func finishAndTakeNext(key finished: String) -> (String, Job)? {
        state.withLock { state in
            state.total -= 1
            let left = (state.running[finished] ?? 1) - 1
            state.running[finished] = left > 0 ? left : nil
            // The first key in turn that may take one more thread.
            for position in state.turn.indices {
                let key = state.turn[position]
                guard (state.running[key] ?? 0) < perKeyThreads, var queue = state.waiting[key],
                    let (_, job) = queue.popFirst()
                else { continue }
                state.turn.remove(at: position)
                if queue.isEmpty {
                    state.waiting[key] = nil
                } else {
                    state.waiting[key] = queue
                    state.turn.append(key)
                }
                state.running[key, default: 0] += 1
                return (key, job)
            }
            state.idleThreads += 1
            return nil
        }
    }
}
