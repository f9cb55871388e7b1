import Foundation
import Testing

@testable import WorkoutServer

/// Client dates (query parameters and every date of a live batch) are parsed by one total, bounded parser: a
/// fraction of at most 9 digits, years 1900–2200, never Foundation's formatter (ICU crashed the process on a
/// fraction of 35 digits and read year 99999999 as 2017).
@Suite("date input")
struct DateInputTests {
    static let longFractions = [String(repeating: "0", count: 35), String(repeating: "1", count: 1_000)]

    @Test("fractions of 35 and 1,000 digits in from/to answer 400 and the server keeps serving")
    func longFractionsInQueries() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "dora").token
        for digits in Self.longFractions {
            for path in ["/v1/samples?to=2026-05-01T07:30:00.\(digits)Z", "/v1/workouts?from=2026-05-01T07:30:00.\(digits)Z"] {
                let answer = try await server.send("GET", path, token: token)
                #expect(answer.status == 400 && answer.errorCode == "invalid_parameter", "\(answer.status) \(answer.text.prefix(300))")
                #expect(answer.errorMessage?.contains("at most 9 fraction digits") == true, "\(answer.text.prefix(300))")
            }
        }
        // Still serving: a valid date with 9 digits answers.
        let valid = try await server.send("GET", "/v1/samples?to=2026-05-01T07:30:00.123456789Z", token: token)
        #expect(valid.status == 200, "\(valid.text)")
        #expect(try await server.send("GET", "/health", token: nil).status == 200)
        await server.stop()
    }

    @Test("a year of more than four digits, or outside 1900–2200, answers 400 (it was read as 2017)")
    func yearsOutOfRange() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "eli").token
        for date in ["99999999-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "1899-12-31T23:59:59Z", "2201-01-01T00:00:00Z"] {
            let answer = try await server.send("GET", "/v1/workouts?from=\(date)", token: token)
            #expect(answer.status == 400 && answer.errorCode == "invalid_parameter", "\(date): \(answer.text)")
            #expect(answer.errorMessage?.contains("years 1900–2200") == true, "\(answer.text)")
        }
        #expect(try await server.send("GET", "/v1/workouts?from=1900-01-01T00:00:00Z", token: token).status == 200)
        await server.stop()
    }

    @Test("a 35- or 1,000-digit fraction in a live batch answers 400, nothing of the batch is kept, the session goes on")
    func longFractionsInABatch() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "fay").token
        let session = UUID().uuidString
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        let path = "/v1/sessions/\(session)/batches"
        let start = Date().addingTimeInterval(-60)
        let day = String(iso(start).prefix(19))
        for digits in Self.longFractions {
            for field in ["at", "sample"] {
                var items: [[String: Any]] = [["kind": "start", "at": field == "at" ? "\(day).\(digits)Z" : iso(start)]]
                items.append(["kind": "samples", "samples": [["type": "heartRate", "value": 120, "start": field == "sample" ? "\(day).\(digits)Z" : iso(start)]]])
                let answer = try await server.json("POST", path, token: token, ["seq": 1, "items": items])
                #expect(answer.status == 400 && answer.errorCode == "invalid_json", "\(field): \(answer.text.prefix(300))")
            }
        }
        let state = try await server.send("GET", "/v1/sessions/\(session)", token: token)
        #expect(state.json["lastBatch"] as? Int == 0, "\(state.text)")
        let good = try await server.json("POST", path, token: token, heartRateBatch(seq: 1, start: start, count: 3, startSession: true))
        #expect(good.status == 200 && good.json["ack"] as? Int == 1, "\(good.text)")
        await server.stop()
    }
}
