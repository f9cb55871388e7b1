import Foundation
import Testing

@testable import WorkoutServer

/// A request cancelled (its client hung up) gives back its place in the store queue at once, whenever the
/// cancellation came: before its work was submitted as well as while it waited.
@Suite("request cancellation")
struct RequestCancellationTests {
    @Test("a request cancelled before its store work is submitted leaves the queue at once, not when a thread frees")
    func aRequestCancelledBeforeSubmissionLeavesTheQueueAtOnce() async throws {
        let key = "cancel-queue-\(UUID())"
        let release = Flag()
        defer { release.set() }
        // The key's share of the store threads held: its next call waits in the queue.
        let holders = holdStoreThreads(key: key, until: release)
        #expect(await waitUntil(30, every: .milliseconds(5)) { Offload.store.load(of: key) == holders.count })
        let ran = Flag()
        let answered = Flag()
        let request = Task { () -> APIError? in
            defer { answered.set() }
            // Cancelled before the work is submitted: the cancellation handler finds nothing to drop yet.
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                try await Offload.run(
                    on: Offload.store, key: key, interruptible: true, { () throws(APIError) in ran.set() },
                    refusal: { .unavailable("refused") })
                return nil
            } catch {
                return error as? APIError ?? .internalError("\(error)")
            }
        }
        // Answered while the holders still hold every thread the key may take: dropped from the queue, not run.
        #expect(
            await waitUntil(20, every: .milliseconds(5)) { answered.isSet },
            "the cancelled request waited in the queue for a thread")
        #expect(Offload.store.load(of: key) == holders.count)
        release.set()
        #expect(await request.value == .cancelled)
        for holder in holders { await holder.value }
        #expect(!ran.isSet, "the cancelled request's work ran")
    }
}

/// Holds every store thread `key` may take (its share of `Offload.store`) until `release` is set (at most two
/// minutes), so that the key's next store work waits in the queue. Wait for `Offload.store.load(of: key)` to reach
/// the holders' count before relying on it.
func holdStoreThreads(key: String, until release: Flag) -> [Task<Void, Never>] {
    (0..<Offload.storeThreadsPerRequester).map { _ in
        Task {
            try? await Offload.run(
                on: Offload.store, key: key,
                { () throws(APIError) in
                    let deadline = ContinuousClock.now + .seconds(120)
                    while !release.isSet, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.002) }
                }, refusal: { .unavailable("refused") })
        }
    }
}
