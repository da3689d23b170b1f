"""The library's simulated members: a task's turns after the first come from here (its `user`)."""

from __future__ import annotations

from agent_env import UserContext


def member(context: UserContext, name: str, wants: str) -> str | None:
    """A member at the desk who wants a book: leaves (None) once the catalog lends it to them, and
    otherwise answers what the librarian's last reply asked for."""
    if any(loan["member"] == name for loan in context.envs["catalog"].call("loans")):
        return None
    reply = context.reply.lower()
    answers = []
    if any(word in reply for word in ("which", "what book", "title")):
        answers.append(f"I would like {wants}.")
    if "name" in reply:
        answers.append(f"My name is {name}.")
    if answers:
        return " ".join(answers)
    if "lent" in reply:
        return f"The catalog does not show {wants} lent to me, though. I am {name}."
    return f"Sorry, could you lend me {wants}? My name is {name}."
