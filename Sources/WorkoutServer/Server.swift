import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle
import Synchronization
import UnixSignals
import WorkoutEngine
import WorkoutFormats
import WorkoutModel
import WorkoutImport
import WorkoutReport
import WorkoutStore
import WorkoutStorePostgres

/// How much the server logs (swift-log's levels).
public enum ServerLogLevel: String, Sendable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var logger: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}

/// How `workout serve` runs.
public struct ServerConfiguration: Sendable {
    /// The data folder: `uploads/` (files being imported) and, without `postgresURL`, `directory.sqlite`
    /// (athletes, token hashes) and `athletes/<id>.sqlite` (their stores).
    public var dataFolder: String
    /// Keep the workouts, athletes and token hashes in this PostgreSQL database (`postgres://user@host:port/db`)
    /// instead of SQLite files: several servers on one database serve the same athletes.
    public var postgresURL: String?
    /// A read replica of `postgresURL` (streaming replication): workout lists, shows, samples and reports
    /// read there; writes, live sessions and the directory stay on `postgresURL`.
    public var readURL: String?
    /// The most connections to PostgreSQL (per URL).
    public var poolSize: Int
    public var host: String
    /// 0 picks a free port (reported to `onListening`).
    public var port: Int
    /// The largest request body accepted, bytes (64 MB by default).
    public var bodyLimit: Int
    public var logLevel: ServerLogLevel
    /// The most live sessions one athlete may have open on this server at once (all its tokens together);
    /// opening one more is a 429 that writes nothing. Idle sessions released by `sessionIdleTimeout` do not count
    /// while released; one coming back (a batch, its state) takes a place again, and is a 429 beyond the limit.
    public var maxOpenSessionsPerAthlete: Int = 8
    /// A live session without any request for this long is released from memory: its journal stays, nothing
    /// is lost, and the next request of its client resumes it where it was (seconds; 30 minutes by default).
    public var sessionIdleTimeout: TimeInterval = 30 * 60
    /// How long the server trusts a token it has looked up in the directory (seconds; 1 by default): a token
    /// revoked meanwhile is refused once this has passed since the server last looked it up. 0 looks every
    /// request's token up (one directory query per request).
    public var tokenCacheLifetime: TimeInterval = 1
    /// Where the server's log lines go instead of swift-log's process-wide handler (tests read them here).
    var logSink: (@Sendable (String) -> Void)?
    /// The longest one database statement may run, seconds (10 by default; 0: no limit): PostgreSQL's
    /// `statement_timeout` on every pooled connection, an interrupt for SQLite. A request whose statement passes it
    /// is answered 503 `query_timeout` with Retry-After.
    public var statementTimeout: TimeInterval = 10
    /// A connection without a request in progress for this long is closed, seconds (60 by default; 0: never):
    /// one that sends nothing, stops in the middle of its request head, or stays idle after a response.
    public var idleTimeout: TimeInterval = 60
    /// The most open client connections (4,096 by default), and never more than the process's descriptor limit
    /// less `reservedDescriptors`: past it the longest-idle connection is closed to make room for a new one, or
    /// the new one is closed at once when every connection has a request in progress.
    public var maxConnections: Int = 4096
    /// The most requests one connection may send; the connection is closed after the answer to the last one.
    public var maxRequestsPerConnection: Int = 10_000

    public init(
        dataFolder: String, postgresURL: String? = nil, poolSize: Int = 16, host: String = "127.0.0.1", port: Int = 8080,
        bodyLimit: Int = 64 * 1024 * 1024, logLevel: ServerLogLevel = .info
    ) {
        self.dataFolder = dataFolder
        self.postgresURL = postgresURL
        self.poolSize = poolSize
        self.host = host
        self.port = port
        self.bodyLimit = bodyLimit
        self.logLevel = logLevel
    }
}

/// The HTTP server of `workout serve`: athletes' uploads, queries and live sessions (docs/openapi.yaml).
///
/// Run it with `run()`; it stops gracefully on SIGTERM/SIGINT (or `ServiceGroup` shutdown): requests in
/// flight, and so batch commits in flight, finish before it exits.
public final class WorkoutServer: Sendable {
    public let configuration: ServerConfiguration
    let directory: ServerDirectory
    /// Tokens looked up recently (`ServerConfiguration.tokenCacheLifetime`).
    let tokenCache: TokenCache
    let stores: AthleteStores
    let sessions = LiveSessions()
    let metrics: ServerMetrics
    let shuttingDown = Atomic<Bool>(false)
    /// The files being imported now, as "athlete id/SHA-256 of the bytes": the same file twice at once is a 409.
    let uploadsInFlight = Mutex<Set<String>>([])
    /// The steps of the last graceful stop, in order (what the tests check the order with).
    let shutdownSteps = Mutex<[String]>([])
    /// The service group while `run()` runs (for `shutdown()`).
    let running = Mutex<ServiceGroup?>(nil)

    public init(configuration: ServerConfiguration) throws(ServerSetupError) {
        self.configuration = configuration
        tokenCache = TokenCache(lifetime: configuration.tokenCacheLifetime)
        if let url = configuration.postgresURL {
            // The directory's tables live in the workouts' database (one pool): servers on one database share it.
            let database: PostgresWorkoutDatabase
            do {
                database = try PostgresWorkoutDatabase(
                    url: url, poolSize: configuration.poolSize, statementTimeout: configuration.statementTimeout)
            } catch {
                throw .storage(path: "PostgreSQL", detail: "\(error)")
            }
            directory = try ServerDirectory(database: database)
            var reader: AthleteStores.Backing?
            if let readURL = configuration.readURL {
                do {
                    reader = .postgres(
                        try PostgresWorkoutDatabase(
                            url: readURL, poolSize: configuration.poolSize, readOnly: true,
                            statementTimeout: configuration.statementTimeout))
                } catch {
                    throw .storage(path: "PostgreSQL (--read-url)", detail: "\(error)")
                }
            }
            stores = AthleteStores(backing: .postgres(database), reader: reader)
        } else {
            if configuration.readURL != nil {
                throw .storage(
                    path: configuration.dataFolder,
                    detail: "--read-url needs a PostgreSQL --db (a read replica of it); SQLite stores have none")
            }
            directory = try ServerDirectory(folder: configuration.dataFolder)
            stores = AthleteStores(
                backing: .sqlite(
                    folder: (configuration.dataFolder as NSString).appendingPathComponent("athletes"),
                    statementTimeout: configuration.statementTimeout))
        }
        metrics = ServerMetrics()
    }

    /// Stops a running server gracefully, as SIGTERM does (no-op when it is not running).
    public func shutdown() async {
        await running.withLock { $0 }?.triggerGracefulShutdown()
    }

    /// Runs until a shutdown signal; `onListening` gets the bound port once the server accepts connections.
    public func run(
        handleSignals: Bool = true, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        var logger =
            configuration.logSink.map { sink in Logger(label: "workout.serve") { _ in LineLogHandler(sink: sink) } }
            ?? Logger(label: "workout.serve")
        logger.logLevel = configuration.logLevel.logger
        // Files of uploads cut short by a crash (no running upload holds them) are removed before any upload starts.
        let orphans = UploadSpool(dataFolder: configuration.dataFolder).removeOrphans()
        if orphans > 0 { logger.notice("removed \(orphans) upload files left by an earlier run") }
        // Connections: at most `maxConnections` (and never so many that the descriptors run out: the
        // longest-idle one makes room), closed after `idleTimeout` without a request in progress.
        let descriptors = ConnectionGate.raiseDescriptorLimit(wanted: configuration.maxConnections * 2 + 1024)
        let gate = ConnectionGate(
            capacity: ConnectionGate.capacity(configured: configuration.maxConnections, descriptors: descriptors),
            maxRequests: configuration.maxRequestsPerConnection, counters: metrics.connections)
        let idle = configuration.idleTimeout
        let app = Application(
            router: makeRouter(),
            server: .http1KeepingHTTP10Rules(
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [ConnectionGateHandler(gate: gate)],
                    idleTimeout: idle > 0 && idle.isFinite ? .milliseconds(Int64(min(idle, 1e9) * 1000)) : nil)),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "workout",
                // Hummingbird's default of 256 pending connections overflowed when 1,000 recorders connected
                // within a second (the kernel dropped the handshakes; clients saw "connection reset").
                backlog: 4096),
            onServerRunning: { channel in
                await onListening(channel.localAddress?.port ?? 0)
            },
            logger: logger)
        // ServiceGroup stops its services in reverse order, each after the one after it has returned: first the
        // HTTP server (stops accepting, answers the requests in flight, so every commit in flight is finished),
        // then the live sessions (committed and closed), last the databases' connections.
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: StoreCloser(server: self)), .init(service: SessionCloser(server: self)),
                    .init(service: IdleSessionReaper(server: self)), .init(service: app),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [], logger: logger))
        running.withLock { $0 = group }
        defer { running.withLock { $0 = nil } }
        try await group.run()
    }

    // MARK: routes

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: ErrorMiddleware(metrics: metrics))
        router.get("/health") { _, _ in try self.json(["status": "ok"]) }
        router.get("/ready") { _, _ in
            guard !self.shuttingDown.load(ordering: .relaxed) else {
                throw APIError.unavailable("the server is shutting down")
            }
            // Each ping is a database round trip: off the request's thread, on the live pool (quick, and never
            // queued behind a burst of session opens or a large query).
            let (directory, stores) = (self.directory, self.stores)
            try await Offload.run(on: Offload.live) { () throws(APIError) in
                guard directory.ping() else { throw APIError.unavailable("the server directory does not answer") }
                guard stores.ping() else { throw APIError.unavailable("the workouts' database does not answer") }
                guard stores.pingReader() else {
                    throw APIError.unavailable("the read replica (--read-url) does not answer")
                }
            }
            return try self.json(["status": "ready"])
        }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.metrics.registry.emitToBuffer())))
        }
        let v1 = router.group("v1")
        v1.get("me") { request, _ in try await self.me(request) }
        v1.post("workouts") { request, context in try await self.upload(request, context) }
        v1.get("workouts") { request, _ in try await self.listWorkouts(request) }
        v1.get("workouts/:id") { request, context in try await self.showWorkout(request, context) }
        v1.get("workouts/:id/report") { request, context in try await self.report(request, context) }
        v1.delete("workouts/:id") { request, context in try await self.deleteWorkout(request, context) }
        v1.get("samples") { request, _ in try await self.samples(request) }
        v1.put("sessions/:id") { request, context in try await self.openSession(request, context) }
        v1.get("sessions/:id") { request, context in try await self.sessionState(request, context) }
        v1.post("sessions/:id/batches") { request, context in try await self.batch(request, context) }
        v1.post("sessions/:id/finish") { request, context in try await self.finishSession(request, context) }
        return router
    }

    func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let bytes = try Wire.encoder().encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    // MARK: access

    func principal(_ request: Request) async throws(APIError) -> Principal {
        guard let header = request.headers[.authorization] else {
            throw .unauthorized("no token: send 'Authorization: Bearer <token>' (`workout athletes add` prints one)")
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer", Tokens.isWellFormed(String(parts[1])) else {
            throw APIError(
                status: 401, code: "malformed_token",
                message: "the Authorization header is not 'Bearer wk_…' with a token of 35 characters")
        }
        let hash = Tokens.hash(String(parts[1]))
        let directory = directory
        // Off the request's thread: the directory may be a PostgreSQL round trip away.
        let principal = try await tokenCache.principal(hash: hash) { () async throws(APIError) -> Principal? in
            try await Offload.run(on: Offload.live) { () throws(APIError) -> Principal? in
                do {
                    return try directory.principal(hash: hash)
                } catch {
                    throw .unavailable("the server directory cannot be read now; try again", detail: "\(error)")
                }
            }
        }
        guard let principal else {
            throw APIError(status: 401, code: "unknown_token", message: "the token is unknown or revoked; ask for a new one")
        }
        Offload.requester?.principal.withLock { $0 = principal }
        return principal
    }

    /// The athlete a write is for: athlete tokens only.
    func writer(_ request: Request) async throws(APIError) -> Athlete {
        switch try await principal(request) {
        case .athlete(let athlete): return athlete
        case .coach(let team): throw .forbidden("a coach token of team \(team) reads only; use the athlete's own token")
        }
    }

    /// The athletes a read covers: the token's athlete, or a coach's team (one member with `athlete=`).
    func readable(_ principal: Principal, athleteName: String?) async throws(APIError) -> [Athlete] {
        switch principal {
        case .athlete(let athlete):
            if let athleteName, athleteName != athlete.name {
                throw .forbidden("this token reads only athlete \(athlete.name)'s data")
            }
            return [athlete]
        case .coach(let team):
            let directory = directory
            let members = try await Offload.run { () throws(APIError) -> [Athlete] in
                do { return try directory.athletes(team: team) } catch {
                    throw .unavailable("the server directory cannot be read now; try again", detail: "\(error)")
                }
            }
            if let athleteName {
                guard let member = members.first(where: { $0.name == athleteName }) else {
                    throw .forbidden("this coach token reads only the athletes of team \(team)")
                }
                return [member]
            }
            return members
        }
    }

    func pathID(_ context: BasicRequestContext) throws(APIError) -> UUID {
        let text = context.parameters.get("id") ?? ""
        guard let id = UUID(uuidString: text) else {
            throw .badRequest("invalid_id", "'\(text.prefix(64))' is not a workout or session id (a UUID)")
        }
        return id
    }

    /// The media types a JSON body may be sent as (415 `unsupported_media_type` otherwise, or without one).
    static let jsonTypes: Set<String> = ["application/json"]
    /// The media types a FIT upload may be sent as; an upload without a Content-Type is taken as
    /// `application/octet-stream` (RFC 9110 §8.3); any other is 415.
    static let fitTypes: Set<String> = ["application/octet-stream", "application/vnd.ant.fit", "application/fit"]

    /// Refuses a body whose Content-Type (its media type, parameters such as charset aside) is not one of
    /// `accepted`; `orAbsent`: a body without Content-Type is taken.
    func requireContentType(_ request: Request, _ accepted: Set<String>, orAbsent: Bool, what: String) throws(APIError) {
        guard let header = request.headers[.contentType] else {
            if orAbsent { return }
            throw APIError(
                status: 415, code: "unsupported_media_type",
                message: "the \(what) has no Content-Type; send it as " + accepted.sorted().joined(separator: " or "))
        }
        let mediaType = header.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        guard accepted.contains(mediaType) else {
            throw APIError(
                status: 415, code: "unsupported_media_type",
                message: "the \(what) is sent as '\(header.prefix(64))'; send it as " + accepted.sorted().joined(separator: " or "))
        }
    }

    /// A JSON body (Content-Type application/json), read whole up to the body limit.
    func jsonBody(_ request: Request, what: String) async throws(APIError) -> [UInt8] {
        try requireContentType(request, Self.jsonTypes, orAbsent: false, what: what)
        return try await body(request, what: what)
    }

    func body(_ request: Request, what: String) async throws(APIError) -> [UInt8] {
        let limit = configuration.bodyLimit
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            metrics.refusedBodies.increment()
            throw .tooLarge(limit: limit)
        }
        do {
            var buffer = try await request.body.collect(upTo: limit)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            metrics.refusedBodies.increment()
            throw .tooLarge(limit: limit)
        } catch {
            throw APIError(
                status: 400, code: "unreadable_body", message: "the \(what) could not be read; send it again",
                detail: "\(error)")
        }
    }

    // MARK: handlers

    func me(_ request: Request) async throws -> Response {
        let principal = try await principal(request)
        _ = try QueryParameters(request, allowed: [])
        struct Me: Encodable {
            var kind: String
            var athlete: String?
            var team: String?
        }
        switch principal {
        case .athlete(let athlete): return try json(Me(kind: "athlete", athlete: athlete.name, team: athlete.team))
        case .coach(let team): return try json(Me(kind: "coach", athlete: nil, team: team))
        }
    }

    /// `POST /v1/workouts`: a FIT file, imported through the live engine; the same file twice is one workout.
    func upload(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let athlete = try await writer(request)
        _ = try QueryParameters(request, allowed: [])
        try requireContentType(request, Self.fitTypes, orAbsent: true, what: "FIT file")
        let store = try await stores.store(for: athlete)
        let spool = UploadSpool(dataFolder: configuration.dataFolder)
        let file: UploadSpool.File
        do {
            file = try spool.create()
        } catch {
            throw APIError.unavailable(
                "the upload could not be written to the server's data folder; try again later", detail: "\(error)")
        }
        defer { file.close() }
        // The body goes to the file as it arrives: the server never holds an upload's bytes whole in memory.
        let limit = configuration.bodyLimit
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            metrics.refusedBodies.increment()
            throw APIError.tooLarge(limit: limit)
        }
        do {
            for try await buffer in request.body {
                guard file.size + buffer.readableBytes <= limit else {
                    metrics.refusedBodies.increment()
                    throw APIError.tooLarge(limit: limit)
                }
                try file.append(buffer)
            }
        } catch let error as APIError {
            throw error
        } catch let error as StoreError {
            throw APIError.unavailable(
                "the upload could not be written to the server's data folder; try again later", detail: "\(error)")
        } catch {
            throw APIError.badRequest(
                "unreadable_body", "the FIT file's bytes could not be read from the request; send it again",
                detail: "\(error)")
        }
        guard file.size > 0 else {
            throw APIError.badRequest("empty_upload", "the body is empty; send the FIT file's bytes")
        }
        let path = file.path
        struct Uploaded: Encodable {
            var duplicate: Bool
            var athlete: String
            var workout: Workout
            var anomalies: [String]?
        }
        let key = "\(athlete.id)/" + file.digest()
        guard uploadsInFlight.withLock({ $0.insert(key).inserted }) else {
            throw APIError.conflict(
                "upload_in_progress", "the same file is being imported for athlete \(athlete.name) now; wait for that answer")
        }
        defer { _ = uploadsInFlight.withLock { $0.remove(key) } }
        let directory = directory
        let athletePrefix = "\(athlete.id)/"
        let alone = { @Sendable [self] in
            self.uploadsInFlight.withLock { $0.filter { $0.hasPrefix(athletePrefix) }.count == 1 }
        }
        // Not salvaged (unlike `workout import`); the ids salted with the athlete's id: two athletes uploading the
        // same file get two workouts (a coach of both sees both), one athlete uploading it twice gets one.
        // Bounded in time as live sessions are (`TimeBounds`): a file spanning 136 years is refused, not imported.
        let importOptions = ImportOptions(
            salvage: false, idSalt: Self.idSalt(of: athlete), longestSpan: TimeBounds.longest,
            latestEnd: Date().addingTimeInterval(TimeBounds.aheadOfClock))
        let imported = try await Offload.upload(athlete: athlete.id.uuidString) { () throws(APIError) -> Result<FileImportResult, FileImportError> in
            do throws(FileImportError) {
                // Not salvaged (unlike `workout import`): a damaged upload is most likely a transfer cut short,
                // and the client still has the whole file to send again.
                return .success(try FileImport.runFIT(path: path, into: store, options: importOptions))
            } catch .alreadyImported(let file, let id) {
                // The file's id is held by a journal that is no live session's while no other upload of the athlete
                // is in flight: an import cut short (the server stopped mid-upload). It is discarded and the file
                // imported again (before, every later upload of the file answered 404 "vanished").
                // A store or directory that cannot say answers 503 (try again), never a guess either way.
                let saved: Workout?
                do throws(StoreError) { saved = try store.workout(id: id) } catch { throw Parsing.storeError(error) }
                let owner: UUID?
                do {
                    owner = try directory.sessionOwner(id)
                } catch {
                    throw .unavailable("the server directory did not answer; try again", detail: "\(error)")
                }
                guard saved == nil, owner == nil, alone() else { return .failure(.alreadyImported(path: file, workout: id)) }
                do throws(StoreError) {
                    try store.recoverActiveSession(id: id, commitInterval: 0)?.discard()
                } catch {
                    return .failure(.store(path: path, error))
                }
                do throws(FileImportError) {
                    return .success(try FileImport.runFIT(path: path, into: store, options: importOptions))
                } catch {
                    return .failure(error)
                }
            } catch {
                return .failure(error)
            }
        }
        switch imported {
        case .success(let result):
            metrics.uploads.increment()
            let anomalies = result.anomalies.map { "\($0)" }
            return try json(
                Uploaded(
                    duplicate: false, athlete: athlete.name, workout: result.workout,
                    anomalies: anomalies.isEmpty ? nil : anomalies), status: .created)
        case .failure(.alreadyImported(_, let id)):
            let existing = try await Offload.run { () throws(APIError) -> Workout? in
                do throws(StoreError) { return try store.workout(id: id) } catch { throw Parsing.storeError(error) }
            }
            guard let workout = existing else { throw APIError.notFound("workout \(id) vanished") }
            return try json(Uploaded(duplicate: true, athlete: athlete.name, workout: workout))
        case .failure(.format(_, let error)):
            metrics.refusedUploads.increment()
            throw APIError.unprocessable("invalid_fit", "the body is not a FIT file this server can import: \(error)")
        case .failure(.unreadable(_, let detail)):
            throw APIError.unavailable("the upload could not be read back; try again", detail: detail)
        case .failure(.store(_, let error)):
            if case .engine(let engine) = error {
                metrics.refusedUploads.increment()
                throw APIError.unprocessable("invalid_fit", "the FIT file's data was refused by the engine: \(engine)")
            }
            // A time-out keeps its code and Retry-After (`query_timeout`), as on every other store call.
            if case .timedOut = error { throw Parsing.storeError(error) }
            throw APIError.unavailable("the workout could not be saved; try again", detail: "\(error)")
        }
    }

    /// The salt of an athlete's uploads' workout ids (`ImportOptions.idSalt`): from its id, never 0.
    static func idSalt(of athlete: Athlete) -> UInt64 {
        let (high, low) = withUnsafeBytes(of: athlete.id.uuid) {
            ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        return (high ^ low) | 1
    }

    func listWorkouts(_ request: Request) async throws -> Response {
        let principal = try await principal(request)
        let query = try QueryParameters(
            request,
            allowed: ["athlete", "type", "activity", "condition", "from", "to", "minDuration", "maxDuration", "order", "limit"])
        // Every parameter is checked before any database work (a coach's team is a directory query).
        var workoutQuery = WorkoutQuery()
        workoutQuery.activityType = try query.single("type").map(Parsing.activityType)
        let conditions = try Parsing.conditions(query.all("condition"))
        let activity = try query.single("activity").map(Parsing.activityType)
        if activity != nil || !conditions.isEmpty {
            workoutQuery.activities = [ActivityPredicate(activityType: activity, conditions: conditions)]
        }
        workoutQuery.minimumDuration = try query.single("minDuration").map { try Parsing.seconds($0, "minDuration") }
        workoutQuery.maximumDuration = try query.single("maxDuration").map { try Parsing.seconds($0, "maxDuration") }
        workoutQuery.dates = DateRange(
            start: try query.single("from").map { try Parsing.date($0, "from") },
            end: try query.single("to").map { try Parsing.date($0, "to") })
        workoutQuery.ascending = try query.single("order").map(Parsing.ascending) ?? false
        let limit = try query.single("limit").map(Parsing.limit) ?? 1000
        workoutQuery.limit = limit
        let athletes = try await readable(principal, athleteName: query.single("athlete"))
        var found: [(start: Date, body: WorkoutBody)] = []
        for athlete in athletes {
            let store = try await stores.readStore(for: athlete)
            let query = workoutQuery
            let workouts = try await Offload.run { () throws(APIError) -> [Workout] in
                do throws(StoreError) { return try store.workouts(matching: query) } catch { throw Parsing.storeError(error) }
            }
            found += workouts.map { ($0.start, WorkoutBody(athlete: athlete.name, workout: $0)) }
        }
        found.sort { workoutQuery.ascending ? $0.start < $1.start : $0.start > $1.start }
        struct Listing: Encodable { var workouts: [WorkoutBody] }
        return try json(Listing(workouts: found.prefix(limit).map(\.body)))
    }

    /// The athlete (among those readable) holding workout `id`, read where reads go (`--read-url`).
    func locate(_ principal: Principal, id: UUID, athleteName: String?) async throws -> (Athlete, WorkoutStore, Workout) {
        for athlete in try await readable(principal, athleteName: athleteName) {
            let store = try await stores.readStore(for: athlete)
            let workout = try await Offload.run { () throws(APIError) -> Workout? in
                do throws(StoreError) { return try store.workout(id: id) } catch { throw Parsing.storeError(error) }
            }
            if let workout { return (athlete, store, workout) }
        }
        throw APIError.notFound("no workout \(id) among the workouts this token may read")
    }

    func showWorkout(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let principal = try await principal(request)
        let query = try QueryParameters(request, allowed: ["athlete"])
        let id = try pathID(context)
        let (athlete, _, workout) = try await locate(principal, id: id, athleteName: query.single("athlete"))
        return try json(WorkoutBody(athlete: athlete.name, workout: workout))
    }

    /// `GET /v1/workouts/{id}/report`: the page `workout report` writes, for a workout the token may read.
    func report(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let principal = try await principal(request)
        let query = try QueryParameters(request, allowed: ["athlete", "maxHeartRate", "restingHeartRate"])
        let id = try pathID(context)
        var options = ReportOptions()
        if let text = try query.single("maxHeartRate") {
            options.maximumHeartRate = try Parsing.beatsPerMinute(text, "maxHeartRate")
        }
        if let text = try query.single("restingHeartRate") {
            options.restingHeartRate = try Parsing.beatsPerMinute(text, "restingHeartRate")
        }
        if let problem = options.problem { throw APIError.badRequest("invalid_parameter", problem) }
        let (_, store, _) = try await locate(principal, id: id, athleteName: query.single("athlete"))
        let chosen = options
        let html = try await Offload.run { () throws(APIError) -> String in
            let input: ReportInput
            do throws(ReportError) {
                input = try ReportInput.load(id: id, from: store)
            } catch {
                switch error {
                case .workoutNotFound:  // deleted since it was located
                    throw APIError.notFound("no workout \(id) among the workouts this token may read")
                case .store(let error):
                    throw Parsing.storeError(error)
                }
            }
            return WorkoutReport.html(input, options: chosen)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "private, no-store",
                .xContentTypeOptions: "nosniff",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    func deleteWorkout(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let athlete = try await writer(request)
        _ = try QueryParameters(request, allowed: [])
        let id = try pathID(context)
        let store = try await stores.store(for: athlete)
        try await Offload.run { () throws(APIError) in
            do throws(StoreError) {
                try store.delete(workout: id)
            } catch .workoutNotFound {
                throw APIError.notFound("no workout \(id) among this athlete's workouts")
            } catch {
                throw APIError.unavailable("workout \(id) could not be deleted now; try again", detail: "\(error)")
            }
        }
        return Response(status: .noContent)
    }

    func samples(_ request: Request) async throws -> Response {
        let principal = try await principal(request)
        let query = try QueryParameters(
            request, allowed: ["athlete", "type", "from", "to", "workout", "order", "limit"])
        var sampleQuery = SampleQuery()
        sampleQuery.type = try query.single("type").map(Parsing.quantityType)
        sampleQuery.dates = DateRange(
            start: try query.single("from").map { try Parsing.date($0, "from") },
            end: try query.single("to").map { try Parsing.date($0, "to") })
        sampleQuery.workout = try query.single("workout").map { text throws(APIError) -> UUID in
            guard let id = UUID(uuidString: text) else {
                throw .badRequest("invalid_parameter", "workout: '\(text.prefix(64))' is not a workout id (a UUID)")
            }
            return id
        }
        sampleQuery.ascending = try query.single("order").map(Parsing.ascending) ?? true
        let limit = try query.single("limit").map(Parsing.limit) ?? 10000
        sampleQuery.limit = limit
        let athletes = try await readable(principal, athleteName: query.single("athlete"))
        struct Item: Encodable {
            var athlete: String
            var sample: QuantitySample
        }
        var found: [Item] = []
        for athlete in athletes {
            let store = try await stores.readStore(for: athlete)
            let query = sampleQuery
            let samples = try await Offload.run { () throws(APIError) -> [QuantitySample] in
                do throws(StoreError) { return try store.samples(matching: query) } catch { throw Parsing.storeError(error) }
            }
            found += samples.map { Item(athlete: athlete.name, sample: $0) }
        }
        found.sort { sampleQuery.ascending ? $0.sample.start < $1.sample.start : $0.sample.start > $1.sample.start }
        struct Listing: Encodable { var samples: [Item] }
        return try json(Listing(samples: Array(found.prefix(limit))))
    }

    // MARK: live sessions

    func openSession(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let athlete = try await writer(request)
        _ = try QueryParameters(request, allowed: [])
        let id = try pathID(context)
        let setup = try Wire.decode(
            SessionSetupBody.self, from: try await jsonBody(request, what: "session setup"), what: "session setup")
        let configuration = try setup.configuration()
        let (directory, stores) = (directory, stores)
        let (session, created): (LiveSession, Bool)
        do {
            (session, created) = try await sessions.open(
                athlete: athlete, id: id, configuration: configuration,
                limit: self.configuration.maxOpenSessionsPerAthlete
            ) { () throws(APIError) -> (WorkoutStore, new: Bool) in
                let new = try Self.checkOwner(athlete, of: id, claim: true, in: directory)
                return (try stores.storeOpening(for: athlete), new)
            }
        } catch where error.statusCode == 429 {
            metrics.sessionsOverLimit.increment()
            throw error
        }
        if created { metrics.sessionsOpened.increment() }
        // A session this request began holds nothing a database call would change: its state as it is.
        return try json(created ? session.snapshot() : await session.state(), status: created ? .created : .ok)
    }

    /// Refuses a live session id that another athlete opened (403, whatever the request).
    func requireOwner(_ athlete: Athlete, of id: UUID) async throws(APIError) {
        let directory = directory
        _ = try await Offload.run { () throws(APIError) -> Bool in
            try Self.checkOwner(athlete, of: id, claim: false, in: directory)
        }
    }

    /// `requireOwner` on a store thread (blocks); `claim`: the id is claimed for `athlete` when no athlete has it.
    /// Returns whether this call claimed it (a new session id).
    @discardableResult
    static func checkOwner(_ athlete: Athlete, of id: UUID, claim: Bool, in directory: ServerDirectory) throws(APIError) -> Bool {
        let owner: UUID?
        var claimed = false
        do {
            if claim {
                let answer = try directory.claimSession(id, athlete: athlete)
                (owner, claimed) = (answer.owner, answer.isNew)
            } else {
                owner = try directory.sessionOwner(id)
            }
        } catch {
            throw .unavailable("the server directory did not answer; try again", detail: "\(error)")
        }
        if let owner, owner != athlete.id {
            throw APIError(
                status: 403, code: "session_of_another_athlete",
                message: "session \(id) belongs to another athlete; a token reaches only its own athlete's sessions")
        }
        return claimed
    }

    func liveSession(_ athlete: Athlete, _ context: BasicRequestContext) async throws -> LiveSession {
        let id = try pathID(context)
        // A session in memory under this athlete was opened (claimed) by it: no directory lookup per batch.
        if let session = await sessions.inMemory(athlete: athlete, id: id) { return session }
        try await requireOwner(athlete, of: id)
        let store = try await stores.store(for: athlete)
        guard let session = try await revived(athlete: athlete, id: id, store: store) else {
            if try await Self.savedWorkout(id: id, in: store) != nil {
                throw APIError.conflict("session_finished", "session \(id) is already saved as a workout")
            }
            throw APIError.notFound("no live session \(id) for athlete \(athlete.name); open it with PUT /v1/sessions/\(id)")
        }
        return session
    }

    /// `sessions.existing` within the athlete's limit of sessions (a 429 beyond it is counted).
    func revived(athlete: Athlete, id: UUID, store: WorkoutStore) async throws(APIError) -> LiveSession? {
        do {
            return try await sessions.existing(
                athlete: athlete, id: id, store: store, limit: configuration.maxOpenSessionsPerAthlete)
        } catch {
            if error.statusCode == 429 { metrics.sessionsOverLimit.increment() }
            throw error
        }
    }

    func sessionState(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let athlete = try await writer(request)
        _ = try QueryParameters(request, allowed: [])
        let session = try await liveSession(athlete, context)
        return try json(await session.state())
    }

    func batch(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let athlete = try await writer(request)
        _ = try QueryParameters(request, allowed: [])
        let session = try await liveSession(athlete, context)
        let batch = try Wire.decode(BatchBody.self, from: try await jsonBody(request, what: "batch"), what: "batch")
        let steps: CheckedBatch
        do {
            steps = try batch.steps(source: SourceDevice(name: "upload:\(session.athlete.name)"))
        } catch {
            metrics.refusedBatches.increment()
            throw error
        }
        let started = ContinuousClock.now
        let result: (ack: Int, duplicate: Bool)
        do {
            result = try await session.apply(seq: batch.seq, steps: steps)
        } catch {
            metrics.refusedBatches.increment()
            throw error
        }
        let elapsed = (ContinuousClock.now - started).components
        metrics.batchCommit.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
        if !result.duplicate { metrics.batches.increment() }
        struct Ack: Encodable {
            var ack: Int
            var duplicate: Bool
        }
        return try json(Ack(ack: result.ack, duplicate: result.duplicate))
    }

    /// The saved workout `id` of `store`, nil when there is none (off the request's thread).
    ///
    /// A store that cannot answer throws (503 `unavailable`, or `query_timeout`) as every other store read does:
    /// answering 404 then would tell a client whose session is saved, or still journaled, that it is gone.
    static func savedWorkout(id: UUID, in store: WorkoutStore) async throws(APIError) -> Workout? {
        try await Offload.run { () throws(APIError) -> Workout? in try LiveSession.savedWorkout(id: id, in: store) }
    }

    func finishSession(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let athlete = try await writer(request)
        _ = try QueryParameters(request, allowed: [])
        let id = try pathID(context)
        try await requireOwner(athlete, of: id)
        let store = try await stores.store(for: athlete)
        let workout: Workout
        if let session = try await sessions.existing(athlete: athlete, id: id, store: store) {
            workout = try await session.finish()
            await sessions.forget(athlete: athlete, id: id)
        } else if let saved = try await Self.savedWorkout(id: id, in: store) {
            workout = saved
        } else {
            throw APIError.notFound("no live session \(id) for athlete \(athlete.name)")
        }
        return try json(WorkoutBody(athlete: athlete.name, workout: workout))
    }
}

/// Commits the live sessions' pending changes once the HTTP server has drained (graceful shutdown).
struct SessionCloser: Service {
    let server: WorkoutServer

    func run() async throws {
        try? await gracefulShutdown()
        server.shuttingDown.store(true, ordering: .relaxed)
        let uploading = server.uploadsInFlight.withLock { $0.count }
        await server.sessions.closeAll()
        server.shutdownSteps.withLock { $0.append("sessions closed with \(uploading) uploads in flight") }
    }
}

/// Releases live sessions idle longer than `sessionIdleTimeout` (their journals stay; the next request resumes).
struct IdleSessionReaper: Service {
    let server: WorkoutServer

    func run() async throws {
        let timeout = server.configuration.sessionIdleTimeout
        guard timeout > 0, timeout.isFinite else {
            try? await gracefulShutdown()
            return
        }
        // Checks a few times per timeout, at most once a second and at least once a minute.
        let period = min(60, max(1, timeout / 4))
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(period)) }
            if Task.isShuttingDownGracefully || Task.isCancelled { break }
            let released = await server.sessions.releaseIdle(olderThan: timeout)
            if released > 0 { server.metrics.idleSessionsReleased.increment(by: released) }
        }
    }
}

/// Closes the databases' connections last, once the sessions are closed (graceful shutdown).
struct StoreCloser: Service {
    let server: WorkoutServer

    func run() async throws {
        try? await gracefulShutdown()
        let stores = server.stores
        _ = try? await Offload.run(interruptible: false) { () throws(APIError) in stores.closeConnections() }
        server.shutdownSteps.withLock { $0.append("connections closed") }
    }
}

/// A log handler writing each line (level, message, metadata) to a closure (`ServerConfiguration.logSink`).
struct LineLogHandler: LogHandler {
    let sink: @Sendable (String) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        sink("\(event.level) \(event.message) \(fields)")
    }
}
