import ArgumentParser
import Foundation
import WorkoutServer

/// Where the server keeps its data, shared by `workout serve` and `workout athletes`.
struct ServerDataOptions: ParsableArguments {
    static let environmentVariable = "WORKOUT_SERVER_DB"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The workouts: a folder of per-athlete SQLite stores, or a postgres://user@host:port/database URL "
                + "(default: $\(environmentVariable), else $XDG_DATA_HOME/workout-engine/server).",
            valueName: "folder|url"))
    var db: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With a PostgreSQL --db: the folder for uploads in progress (athletes and tokens are in the database) "
                + "(default: $XDG_DATA_HOME/workout-engine/server).",
            valueName: "folder"))
    var data: String?

    static func defaultFolder() -> String {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return (base as NSString).appendingPathComponent("workout-engine/server")
    }

    /// The data folder and, for PostgreSQL, the database URL.
    func locations() -> (folder: String, postgresURL: String?) {
        let chosen = db ?? ProcessInfo.processInfo.environment[Self.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        if let chosen, chosen.hasPrefix("postgres://") || chosen.hasPrefix("postgresql://") {
            return (data ?? Self.defaultFolder(), chosen)
        }
        return (chosen ?? data ?? Self.defaultFolder(), nil)
    }

    /// The athletes' directory: in the PostgreSQL database of a postgres:// --db, else the data folder's SQLite
    /// file (after a warning on standard error when other users can read the folder; never a chmod).
    func directory() throws(ServerSetupError) -> ServerDirectory {
        let (folder, postgresURL) = locations()
        if let postgresURL { return try ServerDirectory(postgresURL: postgresURL, poolSize: 1) }
        Self.warnIfReadableByOthers(folder)
        return try ServerDirectory(folder: folder)
    }

    static func warnIfReadableByOthers(_ folder: String) {
        if let warning = ServerDirectory.permissionWarning(folder: folder) {
            FileHandle.standardError.write(Data((warning + "\n").utf8))
        }
    }
}

/// `workout serve`: the HTTP server for many athletes (uploads, queries, live sessions).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve athletes' workouts over HTTP: uploads, queries and live sessions.",
        discussion: """
            The API is described in docs/openapi.yaml. Every request but /health, /ready and /metrics needs \
            a token (`workout athletes add NAME` prints one). Prints `listening on http://HOST:PORT` once it \
            accepts connections; SIGTERM or Ctrl-C stops it after the requests in flight.
            """)

    @OptionGroup var data: ServerDataOptions

    @Option(
        help: ArgumentHelp(
            "A read replica of the PostgreSQL --db (streaming replication): workout lists, shows, samples and "
                + "reports read there; writes, live sessions and tokens stay on --db.",
            valueName: "url"))
    var readUrl: String?

    @Option(help: ArgumentHelp("The most connections to PostgreSQL (per URL).", valueName: "n"))
    var poolSize = 16

    @Option(
        help: ArgumentHelp(
            "The most live sessions one athlete may have open at once (more: 429).", valueName: "n"))
    var maxSessionsPerAthlete = 8

    @Option(
        help: ArgumentHelp(
            "Minutes without a request after which a live session is released from memory (journal kept; "
                + "the client's next request resumes it). 0: never.",
            valueName: "minutes"))
    var sessionIdleTimeout: Double = 30

    @Option(
        help: ArgumentHelp(
            "Seconds a looked-up token is trusted before the directory is asked again: a token revoked meanwhile "
                + "is refused once they have passed. 0: ask on every request.",
            valueName: "seconds"))
    var tokenCache: Double = 1

    @Option(
        help: ArgumentHelp(
            "Seconds one database statement may run before it is cancelled (503 query_timeout). 0: no limit.",
            valueName: "seconds"))
    var statementTimeout: Double = 10

    @Option(
        help: ArgumentHelp(
            "Seconds a connection may stay without a request in progress (silent, mid-header or idle after an "
                + "answer) before it is closed. 0: never.",
            valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(
        help: ArgumentHelp(
            "The most open client connections (never more than the descriptor limit allows); past it the "
                + "longest-idle connection is closed for a new one.",
            valueName: "n"))
    var maxConnections = 4096

    @Option(help: ArgumentHelp("The address to listen on.", valueName: "host"))
    var host = "127.0.0.1"

    @Option(help: ArgumentHelp("The port (0 picks a free one).", valueName: "port"))
    var port = 8080

    @Option(
        help: ArgumentHelp("The largest request body, e.g. 64MB, 500KB or bytes.", valueName: "size"),
        transform: ServeCommand.size)
    var bodyLimit = 64 * 1024 * 1024

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel = "info"

    /// The largest `--body-limit`: a body is held in memory whole while it is read.
    static let largestBodyLimit = 1 << 30

    /// A size such as `64MB`, `500KB` or a number of bytes, from 1 byte to `largestBodyLimit`; anything else
    /// (a number too large for any unit, say) is a clear error, never an overflow.
    static func size(_ text: String) throws -> Int {
        let units: [(String, Int)] = [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)]
        func digitsOnly(_ text: Substring) -> Bool { !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber } }
        var bytes: Int?
        for (suffix, factor) in units where text.uppercased().hasSuffix(suffix) {
            let digits = text.dropLast(suffix.count)
            if let value = Int(digits) {
                let (product, overflow) = value.multipliedReportingOverflow(by: factor)
                bytes = overflow ? (value > 0 ? .max : .min) : product
            } else if digitsOnly(digits) {
                bytes = .max  // digits too many for an Int: too large
            }
            break
        }
        if bytes == nil, digitsOnly(text[...]) {
            bytes = Int(text) ?? .max  // digits too many for an Int: too large
        }
        guard let bytes else {
            throw ValidationError("'\(text.prefix(40))' is not a size; use e.g. 64MB, 500KB or a number of bytes")
        }
        guard bytes > 0 else { throw ValidationError("'\(text.prefix(40))': a body limit is at least 1 byte") }
        guard bytes <= largestBodyLimit else {
            throw ValidationError("'\(text.prefix(40))' is larger than the largest body limit, 1GB; use a size up to 1GB")
        }
        return bytes
    }

    func run() async throws {
        guard let level = ServerLogLevel(rawValue: logLevel) else {
            throw ValidationError("--log-level '\(logLevel)' is not trace, debug, info, notice, warning, error or critical")
        }
        guard poolSize > 0 else { throw ValidationError("--pool-size must be at least 1") }
        guard maxSessionsPerAthlete > 0 else { throw ValidationError("--max-sessions-per-athlete must be at least 1") }
        guard tokenCache.isFinite, tokenCache >= 0, tokenCache <= 3600 else {
            throw ValidationError("--token-cache must be a number of seconds from 0 to 3600")
        }
        guard sessionIdleTimeout.isFinite, sessionIdleTimeout >= 0 else {
            throw ValidationError("--session-idle-timeout must be a number of minutes >= 0")
        }
        let (folder, postgresURL) = data.locations()
        if readUrl != nil, postgresURL == nil {
            throw ValidationError("--read-url needs a PostgreSQL --db (postgres://…): it names a read replica of it")
        }
        ServerDataOptions.warnIfReadableByOthers(folder)
        var configuration = ServerConfiguration(
            dataFolder: folder, postgresURL: postgresURL, poolSize: poolSize, host: host, port: port,
            bodyLimit: bodyLimit, logLevel: level)
        configuration.readURL = readUrl
        configuration.maxOpenSessionsPerAthlete = maxSessionsPerAthlete
        configuration.sessionIdleTimeout = sessionIdleTimeout * 60
        configuration.tokenCacheLifetime = tokenCache
        configuration.statementTimeout = max(0, statementTimeout)
        configuration.idleTimeout = max(0, idleTimeout)
        configuration.maxConnections = max(1, maxConnections)
        let server: WorkoutServer
        do {
            server = try WorkoutServer(configuration: configuration)
        } catch {
            throw UserFacingError(error)
        }
        let host = self.host
        do {
            try await server.run { port in emitLine("listening on http://\(host):\(port)") }
        } catch {
            throw UserFacingError("the server stopped: \(error)")
        }
    }
}

/// `workout athletes`: the server's athletes and their tokens.
struct AthletesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "athletes", abstract: "Add athletes and issue tokens for `workout serve`.",
        subcommands: [Add.self, Token.self, CoachToken.self, Revoke.self, List.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an athlete and print its first token (shown once; only its hash is kept).")
        @OptionGroup var data: ServerDataOptions
        @Argument(help: "The athlete's name: letters, digits, '.', '_', '-'.") var name: String
        @Option(help: ArgumentHelp("The team whose coach tokens may read this athlete.", valueName: "team"))
        var team: String?

        func run() throws {
            do {
                let directory = try data.directory()
                let (_, token) = try directory.addAthlete(name: name, team: team)
                emitLine(token)
            } catch { throw UserFacingError(error) }
        }
    }

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a new token for an athlete.")
        @OptionGroup var data: ServerDataOptions
        @Argument(help: "The athlete's name.") var name: String

        func run() throws {
            do {
                emitLine(try data.directory().issueToken(athlete: name))
            } catch { throw UserFacingError(error) }
        }
    }

    struct CoachToken: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "coach-token", abstract: "Print a token that reads every athlete of a team (and writes nothing).")
        @OptionGroup var data: ServerDataOptions
        @Argument(help: "The team.") var team: String

        func run() throws {
            do {
                emitLine(try data.directory().issueCoachToken(team: team))
            } catch { throw UserFacingError(error) }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke every token of an athlete.")
        @OptionGroup var data: ServerDataOptions
        @Argument(help: "The athlete's name.") var name: String

        func run() throws {
            do {
                try data.directory().revokeTokens(athlete: name)
            } catch { throw UserFacingError(error) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the athletes and their teams.")
        @OptionGroup var data: ServerDataOptions

        func run() throws {
            do {
                for athlete in try data.directory().athletes() {
                    emitLine(athlete.team.map { "\(athlete.name)\t\($0)" } ?? athlete.name)
                }
            } catch { throw UserFacingError(error) }
        }
    }
}
