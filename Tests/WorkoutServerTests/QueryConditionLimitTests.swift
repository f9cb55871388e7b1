import Foundation
import Testing

@testable import WorkoutServer

/// Repeated `condition` parameters are bounded (8; each is a subquery and a PostgreSQL plan of 1,000 took
/// minutes): beyond, a 400 before any store work, on both backends; and so are the number of parameters and the
/// length of the request target.
@Suite("query condition limit", .serialized)
struct QueryConditionLimitTests {
    static func conditions(_ count: Int) -> String {
        (0..<count).map { "condition=heartRate.average%3E\($0)" }.joined(separator: "&")
    }

    @Test(arguments: Backend.available)
    func aThousandConditionsAnswer400BeforeAnyStoreWork(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "gus")
        let thousand = try await server.send("GET", "/v1/workouts?" + Self.conditions(1_000), token: token)
        #expect(thousand.status == 400 && thousand.errorCode == "too_many_parameters", "\(thousand.text)")
        let nine = try await server.send("GET", "/v1/workouts?" + Self.conditions(9), token: token)
        #expect(nine.status == 400 && nine.errorCode == "too_many_conditions", "\(nine.text)")
        #expect(nine.errorMessage?.contains("at most 8") == true, "\(nine.text)")
        // Refused before any store work: the athlete's store was never opened.
        #expect(!server.server.stores.isOpen(athlete.id), "the store was opened for a refused query")
        // Eight conditions are a query like any other.
        let eight = try await server.send("GET", "/v1/workouts?" + Self.conditions(8), token: token)
        #expect(eight.status == 200, "\(eight.text)")
        #expect(server.server.stores.isOpen(athlete.id))
        await server.stop()
    }

    @Test func aTargetLongerThanTheLimitAnswers414() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "hal").token
        let long = try await server.send(
            "GET", "/v1/workouts?type=" + String(repeating: "a", count: QueryParameters.maximumTargetLength), token: token)
        #expect(long.status == 414 && long.errorCode == "uri_too_long", "\(long.status) \(long.text.prefix(200))")
        #expect(try await server.send("GET", "/health", token: nil).status == 200)
        await server.stop()
    }
}
