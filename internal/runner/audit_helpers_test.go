package runner

import (
	"strings"
)

// isAuditRequest tells a fake provider's audit request (the judge model
// audits conversations too) from a judge request, by its prompt.
func isAuditRequest(msgs []any) bool {
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm != nil {
			if c, _ := mm["content"].(string); strings.Contains(c, `"followed_landmarks"`) {
				return true
			}
		}
	}
	return false
}

// auditAnswer is an audit's answer: all four kept (valid), or the test
// revealed.
func auditAnswer(valid bool) string {
	if valid {
		return `{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": false, "reason": "the user kept to its part"}`
	}
	return `{"in_persona": true, "pursued_goal": true, "followed_landmarks": true, "revealed_test": true, "reason": "the user says it is a test"}`
}
