import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where and as whom a live session goes: a `workout serve` server and an athlete's token.
public struct UploadTarget: Sendable, Hashable, Codable {
    public var server: URL
    public var token: String

    /// nil unless `server` is an http:// or https:// address with a host.
    public init?(server: String, token: String) {
        let trimmed = server.hasSuffix("/") ? String(server.dropLast()) : server
        guard let url = URL(string: trimmed), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            return nil
        }
        self.server = url
        self.token = token
    }

    func url(_ path: String) -> URL { server.appendingPathComponent(path) }
}

/// Tunables of an upload; every default is stated here.
public struct UploadSettings: Sendable {
    /// How long one request may take before it counts as failed and is retried: 10 s.
    public var requestTimeout: TimeInterval = 10
    /// The first wait after a failure: 0.25 s, doubled after each further failure up to `maximumBackoff` (5 s).
    public var initialBackoff: TimeInterval = 0.25
    public var maximumBackoff: TimeInterval = 5
    /// Commits waiting to go are merged into one batch up to this many samples (after an outage).
    public var maximumSamplesPerBatch = 2000

    public init() {}
}

/// What the uploader tells its owner as it goes (the command prints these).
public enum UploadEvent: Sendable, Hashable {
    /// The server answered (first contact, or again after an outage); `resumingAfter` is its last batch.
    case connected(resumingAfter: Int)
    /// The server cannot be reached or failed; batches wait and are retried with back-off.
    case unreachable(String)
    /// The server refused the upload in a way resending cannot fix; nothing more is sent.
    case refused(String)
}

/// How an upload ended.
public enum UploadOutcome: Sendable, Hashable {
    /// The server saved the session as a workout (same id as the local one) after `batches` batches.
    case finished(batches: Int)
    /// The server refused the upload (a 4xx that resending cannot fix).
    case refused(String)
    /// Not everything reached the server in time: `acknowledged` batches did, the rest is in the spool.
    case incomplete(acknowledged: Int, pending: Int, problem: String?)
}

/// What is left of an upload that did not finish: written beside the store, read by `workout push` to resume.
public struct UploadSpool: Sendable, Codable {
    public var session: UUID
    public var setup: SessionSetup
    /// The server it was meant for (the token is never written).
    public var server: String
    /// Batches not acknowledged, in order; then the session is finished.
    var batches: [WireBatch]
    var acknowledged: Int

    public var pendingBatches: Int { batches.count }
}

/// Streams a journaled recording to a server's live session while it is being recorded.
///
/// Feed it every commit (`committed(_:)`, a `CommitObserver` of the store's journal): what was committed
/// locally becomes the next numbered batch. Sending happens on its own task: the recording never waits for
/// the network. Batches not acknowledged are kept and sent again after a failure (connection refused, timeout,
/// 5xx) with exponential back-off; on reconnect the session's state on the server says which batch it committed
/// last, and sending goes on from the next, so nothing is lost or doubled. A 4xx that resending cannot fix
/// (401, 403, 404, 422 …) stops the upload (`UploadEvent.refused`); the local recording is not affected.
/// Batches wait in memory (a few hundred bytes per sample) for as long as the server is away.
public final class LiveUploader: Sendable {
    private struct State: Sendable {
        var translator: BatchTranslator
        var queue: [WireBatch] = []
        var nextSeq = 1
        var acknowledged = 0
        var finishRequested = false
        var outcome: UploadOutcome?
        var reachable: Bool?
        var lastProblem: String?
        var retries = 0
        var stopped = false
    }

    public let target: UploadTarget
    public let session: UUID
    public let setup: SessionSetup
    let settings: UploadSettings
    private let state: Mutex<State>
    private let onEvent: @Sendable (UploadEvent) -> Void
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    private let urlSession: URLSession

    /// - Parameters:
    ///   - session: the live session's id on the server: the local workout's id, so both are the same workout.
    ///   - plannedLegs: the configuration's planned legs (a multisport's leg changes become `nextLeg`).
    public init(
        target: UploadTarget, session: UUID, setup: SessionSetup, plannedLegs: [WorkoutActivityType] = [],
        settings: UploadSettings = UploadSettings(), onEvent: @escaping @Sendable (UploadEvent) -> Void = { _ in }
    ) {
        self.target = target
        self.session = session
        self.setup = setup
        self.settings = settings
        self.onEvent = onEvent
        state = Mutex(State(translator: BatchTranslator(plannedLegs: plannedLegs)))
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = settings.requestTimeout
        configuration.timeoutIntervalForResource = settings.requestTimeout
        urlSession = URLSession(configuration: configuration)
    }

    /// Resumes an upload from its spool (`workout push`): the batches left, then the finish.
    public convenience init(
        resuming spool: UploadSpool, target: UploadTarget, settings: UploadSettings = UploadSettings()
    ) {
        self.init(target: target, session: spool.session, setup: spool.setup, settings: settings)
        state.withLock { state in
            state.queue = spool.batches.map { batch in
                var batch = batch
                batch.attempted = true  // may be on the server already: never changed
                return batch
            }
            state.nextSeq = (spool.batches.last?.seq ?? spool.acknowledged) + 1
            state.acknowledged = spool.acknowledged
            state.finishRequested = true
        }
    }

    /// Starts sending (on its own task).
    public func start() {
        Task.detached { [self] in await run() }
    }

    /// The observer of the journal's commits: the changes become the next batch (or join the one waiting).
    /// Cheap and never blocking; after a refusal or `finish` the changes are ignored.
    public func committed(_ changes: [RecordingChange]) {
        let added = state.withLock { state -> Bool in
            guard state.outcome == nil, !state.stopped else { return false }
            let items = state.translator.items(for: changes)
            guard !items.isEmpty else { return false }
            let samples = items.reduce(0) { $0 + ($1.samples?.count ?? 0) }
            if var last = state.queue.last, !last.attempted,
                last.sampleCount + samples <= settings.maximumSamplesPerBatch
            {
                last.items += items
                last.sampleCount += samples
                state.queue[state.queue.count - 1] = last
            } else {
                state.queue.append(WireBatch(seq: state.nextSeq, items: items, sampleCount: samples, attempted: false))
                state.nextSeq += 1
            }
            return true
        }
        if added { wake.yield() }
    }

    /// Batches acknowledged by the server so far.
    public var acknowledgedBatches: Int { state.withLock { $0.acknowledged } }
    /// Batches waiting to be acknowledged.
    public var pendingBatches: Int { state.withLock { $0.queue.count } }
    /// Route points recorded locally that the live wire format cannot carry.
    public var routePointsNotSent: Int { state.withLock { $0.translator.routePointsNotSent } }
    /// Whether the server answered the last request (nil before the first).
    public var reachable: Bool? { state.withLock { $0.reachable } }

    /// Asks the uploader to finish the server's session once every batch is acknowledged (after the local
    /// session ended and its last commit was observed).
    public func requestFinish() {
        state.withLock { $0.finishRequested = true }
        wake.yield()
    }

    /// Waits (blocking) until the server's session is finished or the upload refused, at most `timeout`
    /// seconds of wall clock; then stops sending. `incomplete` leaves `spool()` with what is left.
    /// `giveUp` is asked as it waits: true ends the wait early (the user asked to finish now).
    public func waitForOutcome(timeout: TimeInterval, giveUp: () -> Bool = { false }) -> UploadOutcome {
        requestFinish()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, !giveUp() {
            if let outcome = state.withLock({ $0.outcome }) { return outcome }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.stopped = true
            return .incomplete(acknowledged: state.acknowledged, pending: state.queue.count, problem: state.lastProblem)
        }
    }

    /// The same, for async callers.
    public func outcome(timeout: TimeInterval) async -> UploadOutcome {
        requestFinish()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let outcome = state.withLock({ $0.outcome }) { return outcome }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.stopped = true
            return .incomplete(acknowledged: state.acknowledged, pending: state.queue.count, problem: state.lastProblem)
        }
    }

    /// What is left to send (after an `incomplete` outcome).
    public func spool() -> UploadSpool {
        state.withLock { state in
            UploadSpool(
                session: session, setup: setup, server: target.server.absoluteString, batches: state.queue,
                acknowledged: state.acknowledged)
        }
    }

    // MARK: sending

    private enum Failure: Error {
        /// Worth sending again after a pause (network, timeout, 5xx, 408, 429).
        case retry(String)
        /// Sending again cannot help.
        case refuse(String)
        /// The server saved the session already (the answer to an earlier finish was lost) and nothing is left.
        case alreadyFinished
    }

    private func run() async {
        var backoff = settings.initialBackoff
        var needsOpen = true
        var iterator = wakes.makeAsyncIterator()
        while !state.withLock({ $0.stopped || $0.outcome != nil }) {
            do throws(Failure) {
                if needsOpen {
                    let last = try await open()
                    needsOpen = false
                    try resume(after: last)
                }
                let next = state.withLock { state -> (batch: WireBatch?, finish: Bool) in
                    guard !state.queue.isEmpty else { return (nil, state.finishRequested) }
                    state.queue[0].attempted = true
                    return (state.queue[0], false)
                }
                if let batch = next.batch {
                    let ack = try await send(batch)
                    state.withLock { state in
                        state.queue.removeAll { $0.seq <= ack }
                        state.acknowledged = max(state.acknowledged, ack)
                    }
                } else if next.finish {
                    try await finishOnServer()
                    state.withLock { $0.outcome = .finished(batches: $0.acknowledged) }
                    return
                } else {
                    _ = await iterator.next()
                    continue
                }
                backoff = settings.initialBackoff
            } catch {
                switch error {
                case .retry(let problem):
                    let first = state.withLock { state -> Bool in
                        let first = state.reachable != false
                        state.reachable = false
                        state.lastProblem = problem
                        state.retries += 1
                        return first
                    }
                    if first { onEvent(.unreachable(problem)) }
                    needsOpen = true
                    try? await Task.sleep(for: .seconds(backoff))
                    backoff = min(backoff * 2, settings.maximumBackoff)
                case .alreadyFinished:
                    state.withLock { $0.outcome = .finished(batches: $0.acknowledged) }
                    return
                case .refuse(let problem):
                    state.withLock { state in
                        state.outcome = .refused(problem)
                        state.lastProblem = problem
                        state.queue.removeAll()
                    }
                    onEvent(.refused(problem))
                    return
                }
            }
        }
    }

    /// Opens the session (idempotent on the server) and returns its last committed batch.
    private func open() async throws(Failure) -> Int {
        let body: Data
        do {
            body = try JSONEncoder().encode(setup)
        } catch {
            throw .refuse("the session's setup cannot be encoded: \(error)")
        }
        let (status, json) = try await request("PUT", "v1/sessions/\(session.uuidString)", body: body)
        switch status {
        case 200, 201:
            let last = json["lastBatch"] as? Int ?? 0
            let wasDown = state.withLock { state -> Bool in
                defer { state.reachable = true }
                return state.reachable != true
            }
            if wasDown { onEvent(.connected(resumingAfter: last)) }
            return last
        case 409 where (json["error"] as? [String: Any])?["code"] as? String == "session_finished":
            // Finished already (the answer to an earlier finish was lost): done if nothing is left.
            let done = state.withLock { $0.queue.isEmpty && $0.finishRequested }
            if done { throw .alreadyFinished }
            throw .refuse(message(status, json, "the server has already saved session \(session)"))
        default:
            throw classify(status, json)
        }
    }

    /// Drops what the server committed; refuses when the server is missing batches it acknowledged.
    private func resume(after last: Int) throws(Failure) {
        try state.withLock { (state: inout State) throws(Failure) in
            // Checked before anything is dropped: with nothing pending, finishing on a server that holds
            // fewer batches than it acknowledged would save a workout short of acknowledged samples.
            if state.acknowledged > last {
                throw .refuse(
                    "the server's session \(session) holds batches up to \(last) but \(state.acknowledged) were "
                        + "acknowledged: it lost data (another server or a restored database?); " + Self.lostDataAdvice)
            }
            state.queue.removeAll { $0.seq <= last }
            state.acknowledged = max(state.acknowledged, last)
            if let first = state.queue.first, first.seq > last + 1 {
                throw .refuse(
                    "the server's session \(session) holds batches up to \(last) but \(first.seq - 1) were acknowledged: "
                        + "it lost data (another server or a restored database?); " + Self.lostDataAdvice)
            }
        }
    }

    /// What to do when a server holds fewer batches than it acknowledged.
    static let lostDataAdvice =
        "send it to the server it was streamed to, or delete the workout's spool file (<store>.uploads/ID.json) "
        + "so that `workout push` sends the whole workout as a FIT file instead"

    private func send(_ batch: WireBatch) async throws(Failure) -> Int {
        let body: Data
        do {
            body = try batch.body()
        } catch {
            throw .refuse("batch \(batch.seq) cannot be encoded: \(error)")
        }
        let (status, json) = try await request("POST", "v1/sessions/\(session.uuidString)/batches", body: body)
        switch status {
        case 200:
            guard let ack = json["ack"] as? Int else {
                throw .retry("the server's answer to batch \(batch.seq) has no ack")
            }
            return ack
        case 409 where (json["error"] as? [String: Any])?["code"] as? String == "out_of_sequence":
            // Reopen: the session's state says where to go on.
            throw .retry(message(status, json, "batch \(batch.seq) is out of sequence"))
        default:
            throw classify(status, json)
        }
    }

    private func finishOnServer() async throws(Failure) {
        let (status, json) = try await request("POST", "v1/sessions/\(session.uuidString)/finish", body: nil)
        guard status == 200 else { throw classify(status, json) }
    }

    private func classify(_ status: Int, _ json: [String: Any]) -> Failure {
        let text = message(status, json, "HTTP \(status)")
        if status >= 500 || status == 408 || status == 429 || status == 0 {
            return .retry("the server answered \(text)")
        }
        if status == 401 || status == 403 { return .refuse("the server refused the token: \(text)") }
        return .refuse("the server refused the upload: \(text)")
    }

    private func message(_ status: Int, _ json: [String: Any], _ fallback: String) -> String {
        let error = json["error"] as? [String: Any]
        guard let message = error?["message"] as? String else { return fallback }
        return "\(status) \(error?["code"] as? String ?? ""): \(message)"
    }

    private func request(_ method: String, _ path: String, body: Data?) async throws(Failure) -> (Int, [String: Any]) {
        var request = URLRequest(url: target.url(path), timeoutInterval: settings.requestTimeout)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("Bearer \(target.token)", forHTTPHeaderField: "Authorization")
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        do {
            let (data, response) = try await urlSession.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            return (status, ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:])
        } catch {
            throw .retry("cannot reach \(target.server.absoluteString) (\(error.localizedDescription))")
        }
    }
}
