"""Conversations: a person's chats with a tool-using model. Each answer is a Run (kind chat)
of the one engine; this package holds the chat answer's recipe (`recipe`), the transcript
rows, the double-texting rules and what became of a message sent (`outcomes`), and the reads
and writes the front ends call."""
