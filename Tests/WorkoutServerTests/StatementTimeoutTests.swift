import Foundation
import Synchronization
import Testing
import WorkoutStore
import WorkoutStorePostgres

@testable import WorkoutServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// A count shared with the requests of a task group.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

/// Every database statement has a time limit, and one athlete's slow requests hold at most half the store threads
/// (issue 27: 1,000 `condition` parameters kept PostgreSQL planning for minutes, eight such requests took every
/// store thread, and other athletes' lists timed out).
@Suite("statement time limit", .serialized)
struct StatementTimeoutTests {
    /// Holds an exclusive lock on `table` in another PostgreSQL session until the returned process is ended.
    static func lock(_ table: String, url: String) async throws -> Process {
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc",
            "BEGIN; LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600); COMMIT;",
        ]
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let granted = try TestPostgres.psql(
                url,
                "SELECT count(*) FROM pg_locks WHERE relation = '\(table)'::regclass AND mode = 'AccessExclusiveLock' AND granted"
            )
            if granted == "1" { return holder }
            try await Task.sleep(for: .milliseconds(20))
        }
        holder.terminate()
        throw TestFailure("\(table) was not locked")
    }

    /// Ends the session holding the lock on `table` (its backend: killing psql leaves the server's pg_sleep running).
    static func release(_ table: String, holder: Process, url: String) {
        _ = try? TestPostgres.psql(
            url,
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = '\(table)'::regclass "
                + "AND mode = 'AccessExclusiveLock' AND granted")
        holder.waitUntilExit()
    }

    /// A PostgreSQL server with a pool of `poolSize` connections and two athletes who have each listed their
    /// workouts once, the slow athlete's workout partition locked by another client: the set-up of the tests of
    /// the slow athlete's share. `release()` ends the lock (the caller defers it, after `server.remove()`).
    struct SlowAthlete {
        let server: TestServer
        let url: String
        let slow: Athlete
        let slowToken: String
        let otherToken: String
        /// The slow athlete's workout partition, locked.
        let partition: String
        let holder: Process

        static func start(poolSize: Int) async throws -> SlowAthlete {
            let server = try await TestServer.start(backend: .postgres) {
                $0.statementTimeout = 60
                $0.tokenCacheLifetime = 600
                $0.poolSize = poolSize
            }
            do {
                let url = try #require(server.postgresURL)
                let (slow, slowToken) = try server.directory.addAthlete(name: "sam")
                let otherToken = try server.directory.addAthlete(name: "tea").token
                #expect(try await server.send("GET", "/v1/workouts", token: slowToken).status == 200)
                #expect(try await server.send("GET", "/v1/workouts", token: otherToken).status == 200)
                let partition = PostgresSchema.partition("workout", athlete: slow.id)
                let holder = try await StatementTimeoutTests.lock(partition, url: url)
                return SlowAthlete(
                    server: server, url: url, slow: slow, slowToken: slowToken, otherToken: otherToken,
                    partition: partition, holder: holder)
            } catch {
                await server.stop()
                server.remove()
                throw error
            }
        }

        func release() { StatementTimeoutTests.release(partition, holder: holder, url: url) }
    }

    /// The answer's body says nothing of the database: no SQL, no URL, no file path.
    static func hidesInternals(_ answer: Answer) -> Bool {
        let text = answer.text
        return !["SELECT", "postgres://", "/tmp/", ".sqlite", "SQLSTATE", "statement_timeout"].contains { text.contains($0) }
    }

    @Test(
        "a statement waiting past the limit on a lock another client holds is cancelled: 503 query_timeout",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func aStatementPastTheLimitIsCancelledOnPostgreSQL() async throws {
        let server = try await TestServer.start(backend: .postgres) {
            $0.statementTimeout = 1
            $0.tokenCacheLifetime = 600
        }
        defer { server.remove() }
        let url = try #require(server.postgresURL)
        let (athlete, token) = try server.directory.addAthlete(name: "ada")
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        let partition = PostgresSchema.partition("workout", athlete: athlete.id)
        let holder = try await Self.lock(partition, url: url)
        defer { Self.release(partition, holder: holder, url: url) }
        let started = ContinuousClock.now
        let answer = try await server.send("GET", "/v1/workouts", token: token)
        let took = ContinuousClock.now - started
        #expect(answer.status == 503 && answer.errorCode == "query_timeout", "\(answer.status) \(answer.text)")
        #expect(Self.hidesInternals(answer), "\(answer.text)")
        // The lock is held for two minutes: only the limit (1 s) ended the wait (a bound of half the lock's time,
        // for a shared machine's stalls).
        #expect(took < .seconds(60), "answered after \(took)")
        await server.stop()
    }

    @Test(
        "one athlete's eight slow requests leave another athlete's list answering",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func oneAthletesSlowRequestsLeaveOthersAnswered() async throws {
        // The default pool: the slow athlete's queries hold 4 of its 16 connections (with 4, they would hold all).
        let fixture = try await SlowAthlete.start(poolSize: 16)
        let (server, url, slowToken, otherToken, partition) =
            (fixture.server, fixture.url, fixture.slowToken, fixture.otherToken, fixture.partition)
        defer { server.remove() }
        defer { fixture.release() }
        let answered = Counter()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<Offload.storeThreads {
                group.addTask {
                    let client = URLSession(configuration: .ephemeral)
                    var request = URLRequest(url: try #require(URL(string: server.base + "/v1/workouts")))
                    request.setValue("Bearer \(slowToken)", forHTTPHeaderField: "Authorization")
                    request.timeoutInterval = 120
                    let (_, response) = try await client.data(for: request)
                    answered.value.add(1, ordering: .relaxed)
                    return (response as? HTTPURLResponse)?.statusCode ?? 0
                }
            }
            // The slow athlete's requests are all waiting on the lock (its queries hold their store threads).
            let deadline = ContinuousClock.now + .seconds(30)
            var waiting = 0
            while ContinuousClock.now < deadline, waiting < Offload.storeThreadsPerRequester {
                waiting = Int(
                    try TestPostgres.psql(
                        url, "SELECT count(*) FROM pg_locks WHERE relation = '\(partition)'::regclass AND NOT granted"))
                    ?? 0
                if waiting < Offload.storeThreadsPerRequester { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(waiting == Offload.storeThreadsPerRequester, "\(waiting) of the slow athlete's queries wait")
            // The other athlete is answered while they wait (on its own client: the shared one is busy).
            let client = URLSession(configuration: .ephemeral)
            var request = URLRequest(url: try #require(URL(string: server.base + "/v1/workouts")))
            request.setValue("Bearer \(otherToken)", forHTTPHeaderField: "Authorization")
            let (_, response) = try await client.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(answered.value.load(ordering: .relaxed) == 0, "the other list was answered while they all waited")
            fixture.release()
            for try await status in group { #expect(status == 200) }
        }
        await server.stop()
    }

    @Test func aSQLiteStatementPastTheLimitIsInterrupted() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-timeout-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let backend = try SQLiteBackend(path: folder + "/store.sqlite", statementTimeout: 0.5)
        // Counts to ten billion: minutes of work, cut off at the limit.
        let started = ContinuousClock.now
        #expect(throws: StoreError.timedOut) {
            try backend.runReadStatement(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000000) SELECT count(*) FROM n")
        }
        // Minutes of work without the limit: a bound far from both, for a shared machine's stalls.
        #expect(ContinuousClock.now - started < .seconds(60))
        // The connection goes on answering afterwards.
        try backend.runReadStatement("SELECT count(*) FROM sqlite_master")
        // Without a limit the same store answers a short statement as before.
        let unlimited = try SQLiteBackend(path: folder + "/store.sqlite")
        try unlimited.runReadStatement("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT count(*) FROM n")
    }

    @Test(
        "with a pool of 4 connections one athlete's slow requests hold 2 of them and another athlete's list answers",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func oneAthletesSlowRequestsLeaveConnectionsOfASmallPool() async throws {
        // The share of store threads (4) would let the slow athlete hold every connection of this pool: the
        // pool's own share (half of it) leaves the other athlete two.
        let fixture = try await SlowAthlete.start(poolSize: 4)
        let (server, url, slow, slowToken, otherToken, partition) =
            (fixture.server, fixture.url, fixture.slow, fixture.slowToken, fixture.otherToken, fixture.partition)
        defer { server.remove() }
        defer { fixture.release() }
        let waiting = { () -> Int in
            Int((try? TestPostgres.psql(
                url, "SELECT count(*) FROM pg_locks WHERE relation = '\(partition)'::regclass AND NOT granted")) ?? "") ?? -1
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<Offload.storeThreads {
                group.addTask {
                    let client = URLSession(configuration: .ephemeral)
                    var request = URLRequest(url: try #require(URL(string: server.base + "/v1/workouts")))
                    request.setValue("Bearer \(slowToken)", forHTTPHeaderField: "Authorization")
                    request.timeoutInterval = 120
                    let (_, response) = try await client.data(for: request)
                    return (response as? HTTPURLResponse)?.statusCode ?? 0
                }
            }
            // The slow athlete's threads are all taken (4 running: 2 on the lock, 2 waiting for its share).
            #expect(
                await waitUntil(30, every: .milliseconds(250)) {
                    Offload.store.load(of: "athlete:\(slow.id)") == Offload.storeThreads && waiting() >= 2
                }, "the slow athlete's queries never waited")
            let client = URLSession(configuration: .ephemeral)
            var request = URLRequest(url: try #require(URL(string: server.base + "/v1/workouts")))
            request.setValue("Bearer \(otherToken)", forHTTPHeaderField: "Authorization")
            request.timeoutInterval = 20
            let (_, response) = try await client.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(waiting() == 2, "the slow athlete holds more than half the pool")
            fixture.release()
            for try await status in group { #expect(status == 200) }
        }
        await server.stop()
    }

    @Test(
        "a client hanging up while its query waits frees the store thread at once, and PostgreSQL ends the statement",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func aClientHangingUpMidQueryCancelsItOnPostgreSQL() async throws {
        // The limit is ten minutes: only the hang-up can end the query within the test's deadlines.
        let server = try await TestServer.start(backend: .postgres) {
            $0.statementTimeout = 600
            $0.tokenCacheLifetime = 600
        }
        defer { server.remove() }
        let url = try #require(server.postgresURL)
        let (athlete, token) = try server.directory.addAthlete(name: "hal")
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        let partition = PostgresSchema.partition("workout", athlete: athlete.id)
        let holder = try await Self.lock(partition, url: url)
        defer { Self.release(partition, holder: holder, url: url) }
        let waiting = { () -> Int in
            Int((try? TestPostgres.psql(
                url, "SELECT count(*) FROM pg_locks WHERE relation = '\(partition)'::regclass AND NOT granted")) ?? "") ?? -1
        }
        let key = "athlete:\(athlete.id)"
        // The list asked on a connection of its own, which the client closes once the query waits for the lock.
        let port = try #require(URL(string: server.base)?.port.flatMap { UInt16(exactly: $0) })
        // (A blocking connect and send: on a thread of their own, not on the cooperative pool the server answers on.)
        let socket = try await onOwnThread {
            let socket = try ConnectionLimitTests.connect(port, timeout: 30)
            ConnectionLimitTests.send(
                socket, "GET /v1/workouts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
            return socket
        }
        // (psql every quarter second: each is a child process of the test process.)
        #expect(
            await waitUntil(30, every: .milliseconds(250)) { Offload.store.load(of: key) == 1 && waiting() == 1 },
            "the query never waited")
        close(socket)
        let hungUp = ContinuousClock.now
        // The store thread is given back at once (the query's connection closed under it), not at the ten minutes'
        // limit (a bound of a tenth of it, for a shared machine's stalls)…
        #expect(await waitUntil(120, every: .milliseconds(10)) { Offload.store.load(of: key) == 0 })
        let freed = ContinuousClock.now - hungUp
        #expect(freed < .seconds(60), "the store thread was held \(freed) after the client hung up")
        // …and PostgreSQL ends the statement (it checks its client every second), the lock still held.
        #expect(
            await waitUntil(60, every: .milliseconds(250)) { waiting() == 0 },
            "the statement still waits for the lock after the hang-up")
        Self.release(partition, holder: holder, url: url)
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        await server.stop()
    }

    @Test("a cancelled request's running SQLite statement is interrupted at once, long before the time limit")
    func aCancelledRequestInterruptsItsSQLiteStatement() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cancel-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let backend = try SQLiteBackend(path: folder + "/store.sqlite", statementTimeout: 600)
        let key = "cancel-\(UUID())"
        let running = Atomic<Bool>(false)
        // Counts to ten billion on a store thread: minutes of work, the limit ten minutes away.
        let request = Task { () -> APIError? in
            do {
                try await Offload.run(
                    on: Offload.store, key: key, interruptible: true,
                    { () throws(APIError) -> Void in
                        running.store(true, ordering: .relaxed)
                        do {
                            try backend.runReadStatement(
                                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000000) "
                                    + "SELECT count(*) FROM n")
                        } catch {
                            throw .unavailable("the statement failed", detail: "\(error)")
                        }
                    }, refusal: { .unavailable("refused") })
                return nil
            } catch {
                return error as? APIError ?? .internalError("\(error)")
            }
        }
        #expect(await waitUntil(30, every: .milliseconds(10)) { running.load(ordering: .relaxed) })
        // What the client's hang-up does to the request's task.
        request.cancel()
        let cancelled = ContinuousClock.now
        // Freed at once, not at the ten minutes' limit (a bound of a tenth of it, for a shared machine's stalls).
        #expect(await waitUntil(120, every: .milliseconds(10)) { Offload.store.load(of: key) == 0 })
        let freed = ContinuousClock.now - cancelled
        #expect(freed < .seconds(60), "the store thread was held \(freed) after the cancellation")
        #expect(await request.value == .cancelled)
        // The store answers the next statement as before.
        try backend.runReadStatement("SELECT count(*) FROM sqlite_master")
    }

    @Test("a request cancelled before its store work starts is answered cancelled, its work never run")
    func aRequestCancelledBeforeItsWorkRunsIsNotRun() async throws {
        let ran = Atomic<Bool>(false)
        let answer = await Task { () -> APIError? in
            // Cancelled before the work is submitted: nothing can drop it from the queue, the job itself must see it.
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                try await Offload.run(
                    on: Offload.store, key: "early-\(UUID())", interruptible: true,
                    { () throws(APIError) -> Void in ran.store(true, ordering: .relaxed) },
                    refusal: { .unavailable("refused") })
                return nil
            } catch {
                return error as? APIError ?? .internalError("\(error)")
            }
        }.value
        #expect(answer == .cancelled)
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun, "the cancelled request's store work ran")
    }

    @Test("a request cancelled as its store work finishes keeps the work's answer (a committed write is not 499)")
    func aRequestCancelledAfterItsWorkFinishedKeepsItsAnswer() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cancel-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let backend = try SQLiteBackend(path: folder + "/store.sqlite", statementTimeout: 600)
        let done = Atomic<Bool>(false)
        let cancelled = Atomic<Bool>(false)
        let request = Task { () -> Result<Int, APIError> in
            do {
                return .success(try await Offload.run(
                    on: Offload.store, key: "late-\(UUID())", interruptible: true,
                    { () throws(APIError) -> Int in
                        do {
                            try backend.runReadStatement("SELECT count(*) FROM sqlite_master")
                        } catch {
                            throw .unavailable("the statement failed", detail: "\(error)")
                        }
                        done.store(true, ordering: .releasing)
                        // The cancellation arrives once the store work is done, before the job returns.
                        let deadline = ContinuousClock.now + .seconds(30)
                        while !cancelled.load(ordering: .acquiring), ContinuousClock.now < deadline {
                            Thread.sleep(forTimeInterval: 0.001)
                        }
                        return 42
                    }, refusal: { .unavailable("refused") }))
            } catch {
                return .failure(error as? APIError ?? .internalError("\(error)"))
            }
        }
        let finishedWork = await waitUntil(30, every: .milliseconds(5)) { done.load(ordering: .acquiring) }
        #expect(finishedWork)
        request.cancel()
        cancelled.store(true, ordering: .releasing)
        #expect(try await request.value.get() == 42)
    }

    @Test("a cancelled caller's SQLite statement fails before it starts, however short")
    func aCancelledCallersShortSQLiteStatementDoesNotRun() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cancel-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let backend = try SQLiteBackend(path: folder + "/store.sqlite", statementTimeout: 600)
        let cancellation = StoreCancellation()
        cancellation.cancel()
        // A statement of a few virtual-machine steps: the progress handler (every 1,000) never runs for it.
        #expect(throws: StoreError.timedOut) { try cancellation.run { () throws(StoreError) in try backend.runReadStatement("SELECT 1") } }
        try backend.runReadStatement("SELECT 1")
    }

    @Test("no interrupt of a cancellation runs once its wait has returned (a pooled connection lent on is not closed)")
    func anInterruptNeverRunsAfterItsWaitReturned() async throws {
        let cancellation = StoreCancellation()
        let started = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        let returnedBeforeInterruptFinished = Atomic<Bool>(false)
        // The waiter and its interrupt sleep and spin: on threads of their own, not on the cooperative pool.
        let waiter = Task {
            await onOwnThread {
                cancellation.whileWaiting(interrupt: {
                    started.store(true, ordering: .releasing)
                    // A slow interrupt: the wait must not return (and its connection go back to the pool) before it ends.
                    Thread.sleep(forTimeInterval: 0.2)
                    finished.store(true, ordering: .releasing)
                }) {
                    // The statement ends as the cancellation comes.
                    let deadline = ContinuousClock.now + .seconds(30)
                    while !started.load(ordering: .acquiring), ContinuousClock.now < deadline {
                        Thread.sleep(forTimeInterval: 0.001)
                    }
                }
                returnedBeforeInterruptFinished.store(!finished.load(ordering: .acquiring), ordering: .relaxed)
            }
        }
        let canceller = Task { await onOwnThread { cancellation.cancel() } }
        await canceller.value
        await waiter.value
        let interrupted = started.load(ordering: .acquiring)
        let early = returnedBeforeInterruptFinished.load(ordering: .relaxed)
        #expect(interrupted)
        #expect(!early, "the wait returned while its interrupt ran")
    }

    @Test func aStoreTimeoutAnswers503WithRetryAfterAndNoInternals() throws {
        let error = Parsing.storeError(.timedOut)
        #expect(error.statusCode == 503 && error.code == "query_timeout" && error.retryAfter ?? 0 > 0)
    }
}
