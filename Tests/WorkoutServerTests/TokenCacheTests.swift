import Foundation
import Synchronization
import Testing

@testable import WorkoutServer

/// The token cache's lookups: shared by the requests that wait for them, refreshed ahead of expiry, and never
/// trusted past their lifetime.
@Suite("Token cache: shared lookups and refresh ahead of expiry")
struct TokenCacheTests {
    static let dora = Principal.athlete(Athlete(id: UUID(), name: "dora", team: nil))

    /// A clock the test moves: the cache's lifetimes do not depend on how fast a busy machine runs the test.
    final class TestClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: @Sendable () -> ContinuousClock.Instant { { self.instant.withLock { $0 } } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    /// A directory lookup the test holds until it lets it answer, counting how often it was asked.
    final class HeldLookup: Sendable {
        private let state = Mutex<(asked: Int, waiting: [CheckedContinuation<Void, Never>], open: Bool)>((0, [], false))
        let answer: Mutex<Principal?>
        /// How many `ask` calls have begun (asked the cache, or about to).
        private let asking = Atomic<Int>(0)

        init(answer: Principal?) { self.answer = Mutex(answer) }

        var asked: Int { state.withLock { $0.asked } }

        /// Lets every lookup waiting (and every later one) answer.
        func release() {
            let waiting = state.withLock { state in
                state.open = true
                defer { state.waiting.removeAll() }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        /// Holds every later lookup until the next `release`.
        func hold() { state.withLock { $0.open = false } }

        func lookUp() async -> Principal? {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    state.asked += 1
                    if !state.open { state.waiting.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
            return answer.withLock { $0 }
        }

        /// Asks `cache` who token "h" speaks for, with this as its directory.
        func ask(_ cache: TokenCache) async throws -> Principal? {
            asking.add(1, ordering: .relaxed)
            return try await cache.principal(hash: "h") { await self.lookUp() }
        }

        /// Waits (as `waitUntilAsked`) until `count` calls of `ask` have begun.
        func waitUntilAsking(_ count: Int) async throws {
            let reached = await waitUntil(300, every: .milliseconds(10)) { asking.load(ordering: .relaxed) >= count }
            try #require(reached, "\(asking.load(ordering: .relaxed)) requests begun, \(count) awaited")
        }

        /// Waits (up to five minutes: in the parallel pass of a busy machine a new task has waited over a minute
        /// for a cooperative thread) until `count` lookups were asked; fails the test when they were not.
        func waitUntilAsked(_ count: Int) async throws {
            let reached = await waitUntil(300, every: .milliseconds(10)) { asked >= count }
            try #require(reached, "\(asked) lookups asked, \(count) awaited")
        }
    }

    @Test("requests that find a token missing while it is looked up share that one lookup")
    func concurrentMissesShareOneLookup() async throws {
        let cache = TokenCache(lifetime: 30)
        let directory = HeldLookup(answer: Self.dora)
        let answers = try await withThrowingTaskGroup(of: Principal?.self) { group in
            for _ in 0..<50 {
                group.addTask { try await directory.ask(cache) }
            }
            try await directory.waitUntilAsked(1)
            // Every request has begun while the lookup is held (one arriving after the release would find the
            // answer cached, and the test would not have shared anything).
            try await directory.waitUntilAsking(50)
            directory.release()
            return try await group.reduce(into: [Principal?]()) { $0.append($1) }
        }
        #expect(answers.count == 50 && answers.allSatisfy { $0 == Self.dora })
        #expect(directory.asked == 1)
    }

    /// A cache of `lifetime` seconds on a test clock whose token "h" was just looked up (dora), and its directory.
    static func lookedUp(lifetime: TimeInterval) async throws -> (TestClock, TokenCache, HeldLookup) {
        let clock = TestClock()
        let cache = TokenCache(lifetime: lifetime, now: clock.now)
        let directory = HeldLookup(answer: dora)
        directory.release()
        #expect(try await directory.ask(cache) == dora)
        #expect(directory.asked == 1)
        return (clock, cache, directory)
    }

    @Test("a token used in the second half of its lifetime is answered from the cache while one lookup refreshes it")
    func aTokenIsRefreshedAheadOfExpiry() async throws {
        let (clock, cache, directory) = try await Self.lookedUp(lifetime: 3)
        // First half: the cache answers and nothing is looked up.
        clock.advance(.seconds(1))
        #expect(try await directory.ask(cache) == Self.dora)
        #expect(directory.asked == 1)
        clock.advance(.milliseconds(600))
        // Second half: answered at once although the refresh is held, and only one refresh for many requests.
        directory.hold()
        for _ in 0..<20 {
            #expect(try await directory.ask(cache) == Self.dora)
        }
        try await directory.waitUntilAsked(2)
        #expect(directory.asked == 2)
        // The refresh began 1.6 s after the first lookup: its answer is kept past the first lookup's expiry.
        clock.advance(.milliseconds(1600))
        directory.release()
        _ = await waitUntil(300, every: .milliseconds(10)) { cache.cached(hash: "h") != nil }
        #expect(cache.cached(hash: "h")?.0 == Self.dora)
        #expect(directory.asked == 2)
    }

    @Test("a refresh that finds the token revoked drops it: the next request asks the directory and is refused")
    func aRefreshThatFindsTheTokenRevokedDropsIt() async throws {
        let (clock, cache, directory) = try await Self.lookedUp(lifetime: 2)
        directory.answer.withLock { $0 = nil }  // revoked
        clock.advance(.milliseconds(1200))
        // Trusted until its lifetime has passed; this request starts the refresh that sees the revocation.
        #expect(try await directory.ask(cache) == Self.dora)
        try await directory.waitUntilAsked(2)
        _ = await waitUntil(300, every: .milliseconds(10)) { cache.cached(hash: "h") == nil }
        #expect(cache.cached(hash: "h") == nil)
        #expect(try await directory.ask(cache) == nil)
        #expect(directory.asked == 3)
    }

    @Test("a shared lookup that answers later than the lifetime is not trusted: the request asks again, alone")
    func aSharedAnswerOlderThanTheLifetimeIsNotTrusted() async throws {
        let clock = TestClock()
        let cache = TokenCache(lifetime: 0.3, now: clock.now)
        let directory = HeldLookup(answer: Self.dora)
        let request = Task { try await directory.ask(cache) }
        try await directory.waitUntilAsked(1)
        clock.advance(.milliseconds(500))
        directory.release()  // the first lookup answers 0.5 s after it began; the one asked again answers at once
        #expect(try await request.value == Self.dora)
        #expect(directory.asked == 2)
    }

    @Test("with a lifetime of 0 every request asks the directory itself")
    func aLifetimeOfZeroSharesNothing() async throws {
        let cache = TokenCache(lifetime: 0)
        let directory = HeldLookup(answer: Self.dora)
        directory.release()
        for _ in 0..<3 { #expect(try await directory.ask(cache) == Self.dora) }
        #expect(directory.asked == 3)
    }
}
